package cloudprovider_test

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	awsv1 "github.com/openkarpenter/karpenter/pkg/apis/aws/v1"
	"github.com/openkarpenter/karpenter/pkg/cloudprovider"
)

// TestValidateNVIDIAConsumableCapacity: the EC2NodeClass annotation
// karpenter.k8s.aws/nvidia-consumable-capacity as the AWS provider v1.15.2 validates it
// (pkg/controllers/nodeclass/validation.go with nvidiadra.ParseConsumableCapacity): nothing,
// empty or "disabled" asks for nothing; a sharing mode needs the DRANVIDIAGPU gate
// (DRADisabled without it); any other value is refused (NVIDIAConsumableCapacityInvalid),
// gate or not.
func TestValidateNVIDIAConsumableCapacity(t *testing.T) {
	for _, tc := range []struct {
		value      *string
		gate       bool
		wantReason string
	}{
		{nil, false, ""},
		{ptr.To(""), false, ""},
		{ptr.To("disabled"), false, ""},
		{ptr.To("memory"), false, cloudprovider.ReasonDRADisabled},
		{ptr.To("memory"), true, ""},
		{ptr.To("unlimited"), true, ""},
		{ptr.To("4"), false, cloudprovider.ReasonDRADisabled},
		{ptr.To("4"), true, ""},
		{ptr.To("0"), true, cloudprovider.ReasonNVIDIAConsumableCapacityInvalid},
		{ptr.To("half"), true, cloudprovider.ReasonNVIDIAConsumableCapacityInvalid},
		{ptr.To("half"), false, cloudprovider.ReasonNVIDIAConsumableCapacityInvalid},
	} {
		nc := &awsv1.EC2NodeClass{ObjectMeta: metav1.ObjectMeta{Name: "gpu"}}
		if tc.value != nil {
			nc.Annotations = map[string]string{awsv1.AnnotationNVIDIAConsumableCapacity: *tc.value}
		}
		reason, err := cloudprovider.ValidateNVIDIAConsumableCapacity(nc, tc.gate)
		if reason != tc.wantReason || (err != nil) != (tc.wantReason != "") {
			t.Errorf("value %v gate %v: %q %v, want reason %q", tc.value, tc.gate, reason, err, tc.wantReason)
		}
		if err != nil && !strings.Contains(err.Error(), awsv1.AnnotationNVIDIAConsumableCapacity) {
			t.Errorf("value %v: error %q does not name the annotation", tc.value, err)
		}
	}
}
