package apis_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// fieldDifferences are the places where our CRDs' schemas say something else than Karpenter's
// published ones on purpose, keyed "<crd> <version>.<path> <attribute>", with why. Each is also
// a case of TestKarpenterCRDCompatibility (or concerns status, which only controllers write) and
// a line of docs/crd-validation.md. A key that no longer differs fails the test.
var fieldDifferences = map[string]string{
	"ec2nodeclasses.karpenter.k8s.aws v1 required":                                          "an EC2NodeClass without spec can never be ready, so spec is required",
	"ec2nodeclasses.karpenter.k8s.aws v1.spec.blockDeviceMappings[].ebs.volumeSize pattern": "Karpenter's pattern has empty alternatives that let a bare unit (Ti, T) through",
	"nodepools.karpenter.sh v1.spec.template.spec required":                                 "a NodePool without requirements is taken as one with an empty list, as Go clients send it",
	// Karpenter puts maxLength and pattern on the values array, where the API server ignores
	// them; ours limit each value of a NodePool (a NodeClaim's and a NodeOverlay's are not
	// limited, as the API server does not limit Karpenter's).
	"nodepools.karpenter.sh v1.spec.template.spec.requirements[].values maxLength":   "each value is limited instead (values[])",
	"nodepools.karpenter.sh v1.spec.template.spec.requirements[].values pattern":     "each value is limited instead (values[])",
	"nodepools.karpenter.sh v1.spec.template.spec.requirements[].values[] maxLength": "a NodePool requirement's values are label values, refused at admission rather than at run time",
	"nodepools.karpenter.sh v1.spec.template.spec.requirements[].values[] pattern":   "as maxLength",
	"nodeclaims.karpenter.sh v1.spec.requirements[].values maxLength":                "ignored by the API server on an array; a NodeClaim's values may come from pods' node affinity, which Kubernetes does not limit",
	"nodeclaims.karpenter.sh v1.spec.requirements[].values pattern":                  "as maxLength",
	"nodeoverlays.karpenter.sh v1alpha1.spec.requirements[].values maxLength":        "ignored by the API server on an array; the NodeOverlay controller checks the values, as Karpenter's does",
	"nodeoverlays.karpenter.sh v1alpha1.spec.requirements[].values pattern":          "as maxLength",
	"nodeclaims.karpenter.sh v1.status.conditions[] required":                        "our conditions are Kubernetes' metav1.Condition (reason and message always set by our controllers); Karpenter's own condition type makes them optional",
	"nodeclaims.karpenter.sh v1.status.conditions[].reason minLength":                "as required: metav1.Condition's reason",
	"nodeclaims.karpenter.sh v1.status.conditions[].reason pattern":                  "as required: metav1.Condition's reason",
}

// TestCRDFieldsAsKarpenter walks every property of Karpenter's published CRDs (testdata/karpenter)
// and checks that ours has it, with the same type, format, enum, pattern, bounds, required
// fields, default, nullability, unknown-field handling and list or map type, and CEL rules with
// the same messages (ours may add more). Rules are compared by message: that they refuse the
// same objects is TestKarpenterCRDCompatibility's part. The differences on purpose are
// fieldDifferences.
func TestCRDFieldsAsKarpenter(t *testing.T) {
	published := readCRDs(t, "testdata/karpenter")
	ours := readCRDs(t, "../../config/crd")
	seen := map[string]bool{}
	for _, name := range slices.Sorted(maps.Keys(published)) {
		theirs, mine := published[name], ours[name]
		if mine == nil {
			t.Errorf("%s: no such CRD in config/crd", name)
			continue
		}
		for _, v := range theirs.Spec.Versions {
			mv := version(mine, v.Name)
			if mv == nil || mv.Schema == nil {
				t.Errorf("%s: version %s is not served by ours", name, v.Name)
				continue
			}
			theirProps, myProps := properties(v.Schema.OpenAPIV3Schema, v.Name), properties(mv.Schema.OpenAPIV3Schema, v.Name)
			for _, path := range slices.Sorted(maps.Keys(theirProps)) {
				mp, ok := myProps[path]
				if !ok {
					t.Errorf("%s %s: Karpenter's CRD has it and ours does not", name, path)
					continue
				}
				for attr, diff := range schemaDifferences(theirProps[path], mp) {
					key := fmt.Sprintf("%s %s %s", name, path, attr)
					seen[key] = true
					if _, ok := fieldDifferences[key]; !ok {
						t.Errorf("%s %s: %s differs from Karpenter's: %s", name, path, attr, diff)
					}
				}
			}
		}
	}
	for key, why := range fieldDifferences {
		if !seen[key] {
			t.Errorf("%s no longer differs from Karpenter's (it did because %s): drop it from fieldDifferences and docs/crd-validation.md", key, why)
		}
	}
}

// version is the CRD's version of that name.
func version(crd *apiextensionsv1.CustomResourceDefinition, name string) *apiextensionsv1.CustomResourceDefinitionVersion {
	for i := range crd.Spec.Versions {
		if crd.Spec.Versions[i].Name == name {
			return &crd.Spec.Versions[i]
		}
	}
	return nil
}

// properties are the schemas of every property under s, by path from path: ".name" steps into
// a property, "[]" into an array's items and "{}" into a map's values.
func properties(s *apiextensionsv1.JSONSchemaProps, path string) map[string]*apiextensionsv1.JSONSchemaProps {
	out := map[string]*apiextensionsv1.JSONSchemaProps{path: s}
	for name, p := range s.Properties {
		maps.Copy(out, properties(&p, path+"."+name))
	}
	if s.Items != nil && s.Items.Schema != nil {
		maps.Copy(out, properties(s.Items.Schema, path+"[]"))
	}
	if s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil {
		maps.Copy(out, properties(s.AdditionalProperties.Schema, path+"{}"))
	}
	return out
}

// schemaDifferences compares what one property's schema says itself (not its properties,
// items or values, which are properties of their own) and returns each attribute that differs,
// with how.
func schemaDifferences(theirs, mine *apiextensionsv1.JSONSchemaProps) map[string]string {
	out := map[string]string{}
	compare := func(attr string, a, b any) {
		if !reflect.DeepEqual(a, b) {
			ja, _ := json.Marshal(a)
			jb, _ := json.Marshal(b)
			out[attr] = fmt.Sprintf("Karpenter's %s, ours %s", ja, jb)
		}
	}
	sortedJSON := func(vs []apiextensionsv1.JSON) []string {
		var out []string
		for _, v := range vs {
			out = append(out, string(v.Raw))
		}
		slices.Sort(out)
		return out
	}
	compare("type", theirs.Type, mine.Type)
	compare("format", theirs.Format, mine.Format)
	compare("enum", sortedJSON(theirs.Enum), sortedJSON(mine.Enum))
	compare("pattern", theirs.Pattern, mine.Pattern)
	compare("minimum", theirs.Minimum, mine.Minimum)
	compare("maximum", theirs.Maximum, mine.Maximum)
	compare("exclusiveMinimum", theirs.ExclusiveMinimum, mine.ExclusiveMinimum)
	compare("exclusiveMaximum", theirs.ExclusiveMaximum, mine.ExclusiveMaximum)
	compare("minLength", theirs.MinLength, mine.MinLength)
	compare("maxLength", theirs.MaxLength, mine.MaxLength)
	compare("minItems", theirs.MinItems, mine.MinItems)
	compare("maxItems", theirs.MaxItems, mine.MaxItems)
	compare("minProperties", theirs.MinProperties, mine.MinProperties)
	compare("maxProperties", theirs.MaxProperties, mine.MaxProperties)
	compare("required", sorted(theirs.Required), sorted(mine.Required))
	compare("nullable", theirs.Nullable, mine.Nullable)
	compare("default", theirs.Default, mine.Default)
	compare("x-kubernetes-preserve-unknown-fields", theirs.XPreserveUnknownFields, mine.XPreserveUnknownFields)
	compare("x-kubernetes-int-or-string", theirs.XIntOrString, mine.XIntOrString)
	compare("x-kubernetes-embedded-resource", theirs.XEmbeddedResource, mine.XEmbeddedResource)
	compare("x-kubernetes-list-type", theirs.XListType, mine.XListType)
	compare("x-kubernetes-list-map-keys", theirs.XListMapKeys, mine.XListMapKeys)
	compare("x-kubernetes-map-type", theirs.XMapType, mine.XMapType)
	compare("additionalProperties", theirs.AdditionalProperties != nil, mine.AdditionalProperties != nil)
	compare("anyOf", len(theirs.AnyOf), len(mine.AnyOf))
	// Every rule of Karpenter's, by message (ours may say more after Karpenter's words).
	var missing []string
	for _, r := range theirs.XValidations {
		if !slices.ContainsFunc(mine.XValidations, func(m apiextensionsv1.ValidationRule) bool {
			return m.Message == r.Message || (r.Message != "" && strings.HasPrefix(m.Message, r.Message)) || (r.Message == "" && m.Rule == r.Rule)
		}) {
			missing = append(missing, fmt.Sprintf("%q (%s)", r.Message, r.Rule))
		}
	}
	if len(missing) > 0 {
		out["x-kubernetes-validations"] = "ours lacks " + strings.Join(missing, ", ")
	}
	return out
}

// sorted is a sorted copy of ss, nil for none.
func sorted(ss []string) []string {
	if len(ss) == 0 {
		return nil
	}
	return slices.Sorted(slices.Values(ss))
}
