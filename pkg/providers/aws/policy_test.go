package aws

import (
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// impliedActions are the IAM actions AWS authorizes for calls the code makes without naming
// them: CreateFleet launches through RunInstances and tags through CreateTags, launching with
// an instance profile passes its role, and creating a tagged instance profile tags it.
var impliedActions = map[string]string{
	"ec2:RunInstances":       "ec2:CreateFleet",
	"ec2:CreateTags":         "ec2:CreateFleet",
	"iam:PassRole":           "ec2:CreateFleet",
	"iam:TagInstanceProfile": "iam:CreateInstanceProfile",
}

var (
	directCall    = regexp.MustCompile(`clients\.(EC2|SSM|IAM|SQS|Pricing|EKS|ARCZonalShift)\.([A-Z]\w+)\(`)
	paginatorCall = regexp.MustCompile(`\b(ec2|ssm|iam|sqs|pricing|eks)\.New(\w+)Paginator\(`)
	// batchedCall is an EC2 call made through the provider's batchers (ec2Batchers).
	batchedCall = regexp.MustCompile(`\bbatch\.([A-Z]\w+)\(`)
)

// calledActions scans the provider's sources for AWS API calls.
func calledActions(t *testing.T) map[string][]string {
	t.Helper()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range directCall.FindAllStringSubmatch(string(src), -1) {
			action := strings.ToLower(m[1]) + ":" + m[2]
			if m[1] == "ARCZonalShift" {
				action = "arc-zonal-shift:" + m[2]
			}
			out[action] = append(out[action], f)
		}
		for _, m := range paginatorCall.FindAllStringSubmatch(string(src), -1) {
			action := m[1] + ":" + m[2]
			out[action] = append(out[action], f)
		}
		for _, m := range batchedCall.FindAllStringSubmatch(string(src), -1) {
			action := "ec2:" + m[1]
			out[action] = append(out[action], f)
		}
	}
	return out
}

// policyActions reads docs/iam-policy.json.
func policyActions(t *testing.T) map[string]bool {
	t.Helper()
	raw, err := os.ReadFile("../../../docs/iam-policy.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Statement []struct {
			Effect string
			Action json.RawMessage
		}
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatalf("docs/iam-policy.json: %v", err)
	}
	out := map[string]bool{}
	for _, s := range doc.Statement {
		if s.Effect != "Allow" {
			t.Errorf("statement with effect %q: the policy only allows", s.Effect)
		}
		var actions []string
		if err := json.Unmarshal(s.Action, &actions); err != nil {
			var one string
			if err := json.Unmarshal(s.Action, &one); err != nil {
				t.Fatalf("statement action %s: %v", s.Action, err)
			}
			actions = []string{one}
		}
		for _, a := range actions {
			if strings.Contains(a, "*") {
				t.Errorf("action %s: the policy names actions exactly", a)
			}
			out[a] = true
		}
	}
	return out
}

// TestIAMPolicyMatchesTheCode checks that docs/iam-policy.json allows every AWS API the
// provider calls, and nothing it does not call (least privilege).
func TestIAMPolicyMatchesTheCode(t *testing.T) {
	called := calledActions(t)
	if len(called) < 20 {
		t.Fatalf("found only %d AWS calls; is the scan broken? %v", len(called), called)
	}
	policy := policyActions(t)
	for _, action := range slices.Sorted(maps.Keys(called)) {
		if !policy[action] {
			t.Errorf("%s (called in %v) is not in docs/iam-policy.json", action, called[action])
		}
	}
	for action := range policy {
		if len(called[action]) > 0 {
			continue
		}
		if by, ok := impliedActions[action]; ok && len(called[by]) > 0 {
			continue
		}
		t.Errorf("docs/iam-policy.json allows %s, which the code never calls", action)
	}
}
