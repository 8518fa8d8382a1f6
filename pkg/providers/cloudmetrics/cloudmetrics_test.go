package cloudmetrics_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/cloudprovider"
	"github.com/openkarpenter/karpenter/pkg/metrics"
	"github.com/openkarpenter/karpenter/pkg/providers/cloudmetrics"
	"github.com/openkarpenter/karpenter/pkg/test/metricstest"
)

// scripted is a CloudProvider whose every method returns err.
type scripted struct{ err error }

func (s scripted) Name() string { return "scripted" }
func (s scripted) RepairPolicies() []cloudprovider.RepairPolicy {
	return []cloudprovider.RepairPolicy{{ConditionType: "Scripted", ConditionStatus: "False"}}
}
func (s scripted) Create(context.Context, *karpv1.NodeClaim) (*karpv1.NodeClaim, error) {
	return &karpv1.NodeClaim{}, s.err
}
func (s scripted) Delete(context.Context, *karpv1.NodeClaim) error        { return s.err }
func (s scripted) Get(context.Context, string) (*karpv1.NodeClaim, error) { return nil, s.err }
func (s scripted) List(context.Context) ([]*karpv1.NodeClaim, error)      { return nil, s.err }
func (s scripted) GetInstanceTypes(context.Context, *karpv1.NodePool) ([]*cloudprovider.InstanceType, error) {
	return nil, s.err
}
func (s scripted) IsDrifted(context.Context, *karpv1.NodeClaim) (cloudprovider.DriftReason, error) {
	return cloudprovider.DriftReasonAMI, s.err
}
func (s scripted) Reboot(context.Context, *karpv1.NodeClaim, string) error { return s.err }

// callAll calls every method of cp once.
func callAll(cp cloudprovider.CloudProvider) {
	ctx := context.Background()
	_, _ = cp.Create(ctx, &karpv1.NodeClaim{})
	_ = cp.Delete(ctx, &karpv1.NodeClaim{})
	_, _ = cp.Get(ctx, "id")
	_, _ = cp.List(ctx)
	_, _ = cp.GetInstanceTypes(ctx, &karpv1.NodePool{})
	_, _ = cp.IsDrifted(ctx, &karpv1.NodeClaim{})
	_ = cp.Reboot(ctx, &karpv1.NodeClaim{}, "op")
}

var methods = []string{"Create", "Delete", "Get", "List", "GetInstanceTypes", "IsDrifted", "Reboot"}

func TestWrapTimesEveryCall(t *testing.T) {
	cp := cloudmetrics.Wrap(scripted{}, "test.times")
	if cp.Name() != "scripted" {
		t.Errorf("Name() = %q, want the provider's", cp.Name())
	}
	if p := cp.RepairPolicies(); len(p) != 1 || p[0].ConditionType != "Scripted" {
		t.Errorf("RepairPolicies() = %v, want the provider's", p)
	}
	callAll(cp)
	callAll(cp)
	for _, m := range methods {
		count := histogramCount(t, "test.times", m)
		if count != 2 {
			t.Errorf("%s: %d observations, want 2", m, count)
		}
		if n := testutil.ToFloat64(metrics.CloudProviderErrorsTotal.WithLabelValues("test.times", m, "scripted", "", "")); n != 0 {
			t.Errorf("%s: %v errors counted for calls that succeeded", m, n)
		}
	}
	if got, _ := cp.IsDrifted(context.Background(), nil); got != cloudprovider.DriftReasonAMI {
		t.Errorf("IsDrifted passed on %q, want the provider's answer", got)
	}
}

func TestWrapCountsErrorsByType(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{cloudprovider.NewNodeClaimNotFoundError(nil), "NodeClaimNotFoundError"},
		{fmt.Errorf("launching: %w", cloudprovider.NewInsufficientCapacityError(errors.New("ice"))), "InsufficientCapacityError"},
		{cloudprovider.NewNodeClassNotReadyError(errors.New("no subnets")), "NodeClassNotReadyError"},
		{cloudprovider.NewTerminalCreateError(errors.New("bad"), "Invalid", "bad"), "CreateError"},
		{errors.New("throttled"), ""},
	} {
		controller := "test.errors." + strings.ToLower(tc.want)
		callAll(cloudmetrics.Wrap(scripted{err: tc.err}, controller))
		for _, m := range methods {
			if n := testutil.ToFloat64(metrics.CloudProviderErrorsTotal.WithLabelValues(controller, m, "scripted", tc.want, "")); n != 1 {
				t.Errorf("%v: %s counted %v times with error %q, want 1", tc.err, m, n, tc.want)
			}
		}
		if got := cloudmetrics.ErrorType(tc.err); got != tc.want {
			t.Errorf("ErrorType(%v) = %q, want %q", tc.err, got, tc.want)
		}
	}
}

func TestWrapDoesNotTimeTwice(t *testing.T) {
	cp := cloudmetrics.Wrap(cloudmetrics.Wrap(scripted{}, "test.inner"), "test.outer")
	callAll(cp)
	if n := histogramCount(t, "test.inner", "Get"); n != 0 {
		t.Errorf("the inner controller observed %d calls, want 0", n)
	}
	if n := histogramCount(t, "test.outer", "Get"); n != 1 {
		t.Errorf("the outer controller observed %d calls, want 1", n)
	}
}

// histogramCount is the number of calls the controller made to the method.
func histogramCount(t *testing.T, controller, method string) uint64 {
	t.Helper()
	n, _ := metricstest.Observations(t, metrics.CloudProviderDurationSeconds.WithLabelValues(controller, method, "scripted"))
	return n
}
