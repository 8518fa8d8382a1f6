package memory_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/simulate/memory"
	"github.com/openkarpenter/karpenter/pkg/test/apiserver"
	"github.com/openkarpenter/karpenter/pkg/test/builders"
)

var env *apiserver.Env

func TestMain(m *testing.M) { os.Exit(apiserver.Main(m, &env)) }

// harness runs one conformance case against one backend and records what it observes, so the
// runner can compare the API server's transcript with the memory client's.
type harness struct {
	*testing.T
	ctx context.Context
	c   client.Client
	// ns is the case's namespace, created before the case runs; prefix names the case's
	// cluster-scoped objects so cases do not collide on the shared API server.
	ns, prefix string
	// mem is the memory client, nil against the API server.
	mem   *memory.Client
	clock *clocktesting.FakeClock
	log   []string
}

// backendName names the backend in messages.
func (h *harness) backendName() string {
	if h.mem == nil {
		return "apiserver"
	}
	return "memory"
}

// observe records a labelled observation; both backends must record the same.
func (h *harness) observe(label string, v any) {
	h.Helper()
	h.log = append(h.log, fmt.Sprintf("%s: %v", label, v))
}

// observeErr records how a call failed: code, reason and message.
func (h *harness) observeErr(label string, err error) {
	h.Helper()
	h.observe(label, describe(err))
}

// observeReason records only the code and reason of an error (for messages that legitimately
// differ, such as those naming generated values).
func (h *harness) observeReason(label string, err error) {
	h.Helper()
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		h.observe(label, fmt.Sprintf("%d %s", status.Status().Code, status.Status().Reason))
		return
	}
	h.observe(label, err == nil)
}

// describe renders an error as code, reason and message (with resource versions masked).
func describe(err error) string {
	if err == nil {
		return "ok"
	}
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		s := status.Status()
		msg := s.Message
		var causes []string
		if s.Details != nil {
			for _, c := range s.Details.Causes {
				causes = append(causes, fmt.Sprintf("%s %s: %s", c.Type, c.Field, c.Message))
			}
		}
		return fmt.Sprintf("%d %s %q causes=%v", s.Code, s.Reason, msg, causes)
	}
	return "error: " + err.Error()
}

// must fails the case on an error.
func (h *harness) must(err error, what string) {
	h.Helper()
	if err != nil {
		h.Fatalf("%s: %s: %v", h.backendName(), what, err)
	}
}

// name returns a cluster-scoped name unique to the case.
func (h *harness) name(s string) string { return h.prefix + "-" + s }

// now is the backend's time: the wall clock for the API server, the fake clock for memory.
func (h *harness) now() time.Time {
	if h.clock != nil {
		return h.clock.Now()
	}
	return time.Now()
}

// near reports whether t is within tolerance of want (timestamps are whole seconds, and the API
// server's clock runs while a case does).
func near(t, want time.Time, tolerance time.Duration) bool {
	d := t.Sub(want)
	return d > -tolerance && d < tolerance
}

// get reads obj back by its key.
func (h *harness) get(obj client.Object) error {
	return h.c.Get(h.ctx, client.ObjectKeyFromObject(obj), obj)
}

// conformanceCase is one behaviour both backends must show identically.
type conformanceCase struct {
	name string
	run  func(h *harness)
}

// runs counts runBoth's calls in this process (go test -count=N calls it N times).
var runs int

// runBoth runs cases against the API server and a fresh memory client each, then compares the
// transcripts line by line.
func runBoth(t *testing.T, cases []conformanceCase) {
	// Namespaces are never deleted (no namespace controller runs), so each run has its own.
	runs++
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ns := fmt.Sprintf("c%02d-%s", i, sanitize(tc.name))
			if runs > 1 {
				ns = fmt.Sprintf("r%d-%s", runs, ns)
			}
			real := runCase(t, tc, ns, nil, nil)
			clk := clocktesting.NewFakeClock(time.Now())
			mem := runCase(t, tc, ns, memory.New(env.Scheme, clk), clk)
			if t.Failed() {
				return
			}
			if testing.Verbose() {
				t.Logf("transcript:\n%s", strings.Join(real, "\n"))
			}
			if d := diffLines(real, mem); d != "" {
				t.Errorf("the memory client behaves differently from the API server (- apiserver, + memory):\n%s", d)
			}
		})
	}
}

func runCase(t *testing.T, tc conformanceCase, ns string, mem *memory.Client, clk *clocktesting.FakeClock) []string {
	t.Helper()
	h := &harness{T: t, ctx: context.Background(), ns: ns, prefix: ns}
	if mem != nil {
		h.c, h.mem, h.clock = mem, mem, clk
	} else {
		h.c = env.Client
	}
	h.must(h.c.Create(h.ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}), "creating the case's namespace")
	tc.run(h)
	return h.log
}

var nonAlnum = regexp.MustCompile(`[^a-z0-9]+`)

func sanitize(s string) string {
	s = nonAlnum.ReplaceAllString(strings.ToLower(s), "-")
	if len(s) > 40 {
		s = s[:40]
	}
	return strings.Trim(s, "-")
}

// diffLines renders the lines that differ between two transcripts, with their context.
func diffLines(a, b []string) string {
	var out strings.Builder
	n := max(len(a), len(b))
	for i := range n {
		var x, y string
		if i < len(a) {
			x = a[i]
		}
		if i < len(b) {
			y = b[i]
		}
		if x != y {
			fmt.Fprintf(&out, "- %s\n+ %s\n", x, y)
		}
	}
	return out.String()
}

// Builders.

func testPod(ns, name string, labels map[string]string, nodeName string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels},
		Spec: corev1.PodSpec{
			NodeName: nodeName,
			Containers: []corev1.Container{{
				Name: "app", Image: "registry.k8s.io/pause:3.10",
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
					corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("64Mi"),
				}},
			}},
		},
	}
}

// runningReady marks a pod Running and Ready through the status subresource.
func (h *harness) runningReady(pod *corev1.Pod) {
	h.Helper()
	pod.Status.Phase = corev1.PodRunning
	pod.Status.Conditions = append(pod.Status.Conditions, corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionTrue})
	h.must(h.c.Status().Update(h.ctx, pod), "marking pod running")
}

// amd64 is the one requirement of the test NodePools and NodeClaims.
var amd64 = []karpv1.NodeSelectorRequirementWithMinValues{builders.Requirement(corev1.LabelArchStable, corev1.NodeSelectorOpIn, "amd64")}
