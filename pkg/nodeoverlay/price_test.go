package nodeoverlay

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1alpha1"
)

func TestAdjustedPrice(t *testing.T) {
	for _, tc := range []struct {
		change string
		want   float64
		err    bool
	}{
		{"", 0.2, false},
		{"0.05", 0.05, false},
		{"-20%", 0.16, false},
		{"+10%", 0.22, false},
		{"-100%", 0, false},
		{"-0.05", 0.15, false},
		{"+1.2", 1.4, false},
		{"-5", 0, false},
		{"-ten%", 0, true},
		{"abc", 0, true},
	} {
		got, err := AdjustedPrice(0.2, tc.change)
		if (err != nil) != tc.err || !near(got, tc.want) {
			t.Errorf("AdjustedPrice(0.2, %q) = %v, %v; want %v, error %v", tc.change, got, err, tc.want, tc.err)
		}
	}
}

// TestOrderByWeight: higher weight first, unset weight as 0, and among equal weights the name
// later in the alphabet first, as Karpenter orders them.
func TestOrderByWeight(t *testing.T) {
	w := func(n int32) *int32 { return &n }
	os := []v1alpha1.NodeOverlay{
		{ObjectMeta: metav1.ObjectMeta{Name: "a"}},
		{ObjectMeta: metav1.ObjectMeta{Name: "b"}, Spec: v1alpha1.NodeOverlaySpec{Weight: w(5)}},
		{ObjectMeta: metav1.ObjectMeta{Name: "c"}, Spec: v1alpha1.NodeOverlaySpec{Weight: w(5)}},
		{ObjectMeta: metav1.ObjectMeta{Name: "d"}, Spec: v1alpha1.NodeOverlaySpec{Weight: w(1)}},
		{ObjectMeta: metav1.ObjectMeta{Name: "e"}},
	}
	v1alpha1.OrderByWeight(os)
	var got string
	for _, o := range os {
		got += o.Name
	}
	if got != "cbdea" {
		t.Errorf("order %s, want cbdea", got)
	}
}
