package legacy

import (
	"fmt"
	"math/big"
	"sort"
	"strings"

	awsv1 "github.com/openkarpenter/karpenter/pkg/apis/aws/v1"
)

// maxTerms is the most selector terms a v1 EC2NodeClass field holds.
const maxTerms = 30

// The special keys of v0.x selectors.
const (
	keyIDs       = "aws::ids"
	keyIDsOld    = "aws-ids"
	keyAMIName   = "aws::name"
	keyAMIOwners = "aws::owners"
)

// splitList splits a v0.x comma-separated selector value, trimming spaces and dropping empties.
func splitList(value string) []string {
	var out []string
	for _, part := range strings.Split(value, ",") {
		if part = strings.TrimSpace(part); part != "" {
			out = append(out, part)
		}
	}
	return out
}

// parsedSelector is a v0.x selector: IDs, names and owners from the special keys, and tag
// filters (each tag with one or more accepted values).
type parsedSelector struct {
	ids, names, owners []string
	tagKeys            []string
	tagValues          map[string][]string
}

func parseSelector(selector map[string]string, amis bool) parsedSelector {
	p := parsedSelector{tagValues: map[string][]string{}}
	keys := make([]string, 0, len(selector))
	for k := range selector {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := selector[k]
		switch {
		case k == keyIDs || k == keyIDsOld:
			p.ids = append(p.ids, splitList(v)...)
		case amis && k == keyAMIName:
			p.names = append(p.names, splitList(v)...)
		case amis && k == keyAMIOwners:
			p.owners = append(p.owners, splitList(v)...)
		default:
			values := splitList(v)
			if v == "*" || len(values) == 0 {
				values = []string{"*"}
			}
			p.tagKeys = append(p.tagKeys, k)
			p.tagValues[k] = values
		}
	}
	return p
}

// tagCombinations expands tag filters with several values (ORed by EC2 within a filter) into
// one tag map per combination, since a v1 term's tags must all match exactly. The caller
// checks termCount first: the combinations multiply.
func (p parsedSelector) tagCombinations() []map[string]string {
	if len(p.tagKeys) == 0 {
		return nil
	}
	combos := []map[string]string{{}}
	for _, k := range p.tagKeys {
		var next []map[string]string
		for _, v := range p.tagValues[k] {
			for _, c := range combos {
				m := make(map[string]string, len(c)+1)
				for ck, cv := range c {
					m[ck] = cv
				}
				m[k] = v
				next = append(next, m)
			}
		}
		combos = next
	}
	return combos
}

// checkTermCount fails when the terms a selector makes, the product of the numbers of its
// alternatives (lists count as one when empty), are more than a v1 field holds: checked before
// expanding, since a few tags with many values each would make billions.
func checkTermCount(alternatives ...int) error {
	count := big.NewInt(1)
	for _, n := range alternatives {
		count.Mul(count, big.NewInt(int64(max(n, 1))))
	}
	if count.Cmp(big.NewInt(maxTerms)) <= 0 {
		return nil
	}
	return fmt.Errorf("it makes %s v1 terms (one for each combination of its comma-separated values), more than the %d an EC2NodeClass holds: select with fewer values, or a shared tag", count, maxTerms)
}

// tagAlternatives are the numbers of values of each tag filter.
func (p parsedSelector) tagAlternatives() []int {
	counts := make([]int, 0, len(p.tagKeys))
	for _, k := range p.tagKeys {
		counts = append(counts, len(p.tagValues[k]))
	}
	return counts
}

// idsDropOthers reports the keys a selector with IDs also had: v0.x ANDed them with the IDs,
// but a v1 id term stands alone.
func (p parsedSelector) idsDropOthers() string {
	var others []string
	if len(p.names) > 0 {
		others = append(others, keyAMIName)
	}
	if len(p.owners) > 0 {
		others = append(others, keyAMIOwners)
	}
	others = append(others, p.tagKeys...)
	if len(p.ids) == 0 || len(others) == 0 {
		return ""
	}
	return fmt.Sprintf("v1 id terms stand alone, so the other keys (%s), which v0.x also required, are dropped", strings.Join(others, ", "))
}

// subnetTerms translates a v0.x subnet selector.
func subnetTerms(selector map[string]string) ([]awsv1.SubnetSelectorTerm, string, error) {
	p := parseSelector(selector, false)
	var terms []awsv1.SubnetSelectorTerm
	if len(p.ids) > 0 {
		if err := checkTermCount(len(p.ids)); err != nil {
			return nil, "", err
		}
		for _, id := range p.ids {
			terms = append(terms, awsv1.SubnetSelectorTerm{ID: id})
		}
		return terms, p.idsDropOthers(), nil
	}
	if err := checkTermCount(p.tagAlternatives()...); err != nil {
		return nil, "", err
	}
	for _, tags := range p.tagCombinations() {
		terms = append(terms, awsv1.SubnetSelectorTerm{Tags: tags})
	}
	return terms, "", nil
}

// securityGroupTerms translates a v0.x security group selector.
func securityGroupTerms(selector map[string]string) ([]awsv1.SecurityGroupSelectorTerm, string, error) {
	p := parseSelector(selector, false)
	var terms []awsv1.SecurityGroupSelectorTerm
	if len(p.ids) > 0 {
		if err := checkTermCount(len(p.ids)); err != nil {
			return nil, "", err
		}
		for _, id := range p.ids {
			terms = append(terms, awsv1.SecurityGroupSelectorTerm{ID: id})
		}
		return terms, p.idsDropOthers(), nil
	}
	if err := checkTermCount(p.tagAlternatives()...); err != nil {
		return nil, "", err
	}
	for _, tags := range p.tagCombinations() {
		terms = append(terms, awsv1.SecurityGroupSelectorTerm{Tags: tags})
	}
	return terms, "", nil
}

// amiTerms translates a v0.x AMI selector: IDs alone, or every combination of name, owner and
// tag values. It fails for an owner without a name or tags, which v1 cannot express, and for
// more combinations than v1 holds.
func amiTerms(selector map[string]string) ([]awsv1.AMISelectorTerm, string, error) {
	p := parseSelector(selector, true)
	var terms []awsv1.AMISelectorTerm
	if len(p.ids) > 0 {
		if err := checkTermCount(len(p.ids)); err != nil {
			return nil, "", err
		}
		for _, id := range p.ids {
			terms = append(terms, awsv1.AMISelectorTerm{ID: id})
		}
		return terms, p.idsDropOthers(), nil
	}
	if len(p.names) == 0 && len(p.tagKeys) == 0 {
		return nil, "", fmt.Errorf("selecting by %s alone has no v1 equivalent; add aws::name or tags", keyAMIOwners)
	}
	if err := checkTermCount(append(p.tagAlternatives(), len(p.names), len(p.owners))...); err != nil {
		return nil, "", err
	}
	names := p.names
	if len(names) == 0 {
		names = []string{""}
	}
	owners := p.owners
	if len(owners) == 0 {
		owners = []string{""}
	}
	tagSets := p.tagCombinations()
	if len(tagSets) == 0 {
		tagSets = []map[string]string{nil}
	}
	for _, owner := range owners {
		for _, name := range names {
			for _, tags := range tagSets {
				terms = append(terms, awsv1.AMISelectorTerm{Name: name, Owner: owner, Tags: tags})
			}
		}
	}
	return terms, "", nil
}
