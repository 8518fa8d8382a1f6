package legacy

import (
	"reflect"
	"testing"

	awsv1 "github.com/openkarpenter/karpenter/pkg/apis/aws/v1"
)

func TestSubnetTerms(t *testing.T) {
	terms, dropped, _ := subnetTerms(map[string]string{"aws::ids": "subnet-1, subnet-2,", "Name": "x"})
	want := []awsv1.SubnetSelectorTerm{{ID: "subnet-1"}, {ID: "subnet-2"}}
	if !reflect.DeepEqual(terms, want) || dropped == "" {
		t.Errorf("got %+v, %q", terms, dropped)
	}
	terms, dropped, _ = subnetTerms(map[string]string{"a": "1,2", "b": "*", "c": "3"})
	want = []awsv1.SubnetSelectorTerm{
		{Tags: map[string]string{"a": "1", "b": "*", "c": "3"}},
		{Tags: map[string]string{"a": "2", "b": "*", "c": "3"}},
	}
	if !reflect.DeepEqual(terms, want) || dropped != "" {
		t.Errorf("got %+v, %q", terms, dropped)
	}
}

func TestAMITerms(t *testing.T) {
	terms, _, err := amiTerms(map[string]string{"aws::name": "a,b", "aws::owners": "self"})
	want := []awsv1.AMISelectorTerm{{Name: "a", Owner: "self"}, {Name: "b", Owner: "self"}}
	if err != nil || !reflect.DeepEqual(terms, want) {
		t.Errorf("got %+v, %v", terms, err)
	}
	terms, _, err = amiTerms(map[string]string{"team": "x", "aws::owners": "amazon"})
	want = []awsv1.AMISelectorTerm{{Owner: "amazon", Tags: map[string]string{"team": "x"}}}
	if err != nil || !reflect.DeepEqual(terms, want) {
		t.Errorf("got %+v, %v", terms, err)
	}
	if _, _, err := amiTerms(map[string]string{"aws::owners": "amazon"}); err == nil {
		t.Error("owners alone: want an error")
	}
}

func TestSecondsText(t *testing.T) {
	for s, want := range map[int64]string{0: "0s", 30: "30s", 90: "1m30s", 300: "5m", 3601: "1h1s", 2592000: "720h"} {
		if got := secondsText(s); got != want {
			t.Errorf("%d: got %q, want %q", s, got, want)
		}
	}
}
