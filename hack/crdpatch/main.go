// Command crdpatch adds to the generated CRDs the few schema constraints controller-gen cannot
// express from Go markers: limits on the values of a map[string]string (its
// additionalProperties). `make generate` runs it after controller-gen.
package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"
)

// labelValuePattern is Kubernetes' label value syntax.
const labelValuePattern = `^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$`

// mapValueLimit constrains the values of a map property at a path in a CRD's schema.
type mapValueLimit struct {
	file      string
	path      []string // property names from the version's root schema
	maxLength int64
	pattern   string
}

var limits = []mapValueLimit{
	{"karpenter.sh_nodepools.yaml", []string{"spec", "template", "metadata", "labels"}, 63, labelValuePattern},
}

func main() {
	dir := "config/crd"
	if len(os.Args) > 1 {
		dir = os.Args[1]
	}
	for _, limit := range limits {
		if err := apply(filepath.Join(dir, limit.file), limit); err != nil {
			fmt.Fprintf(os.Stderr, "crdpatch: %v\n", err)
			os.Exit(1)
		}
	}
}

func apply(file string, limit mapValueLimit) error {
	data, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.UnmarshalStrict(data, crd); err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	for i := range crd.Spec.Versions {
		schema := crd.Spec.Versions[i].Schema.OpenAPIV3Schema
		for _, name := range limit.path {
			next, ok := schema.Properties[name]
			if !ok {
				return fmt.Errorf("%s: no property %s on the path %s", file, name, strings.Join(limit.path, "."))
			}
			schema = &next
		}
		if schema.AdditionalProperties == nil || schema.AdditionalProperties.Schema == nil {
			return fmt.Errorf("%s: %s is not a map", file, strings.Join(limit.path, "."))
		}
		// Properties holds copies, but they share the AdditionalProperties pointer with the CRD,
		// so the change below lands in it.
		values := schema.AdditionalProperties.Schema
		values.MaxLength = ptr.To(limit.maxLength)
		values.Pattern = limit.pattern
	}
	out, err := yaml.Marshal(crd)
	if err != nil {
		return err
	}
	out = bytes.Replace(out, []byte("status:\n  acceptedNames:\n    kind: \"\"\n    plural: \"\"\n  conditions: null\n  storedVersions: null\n"), nil, 1)
	return os.WriteFile(file, append([]byte("---\n"), out...), 0o644)
}
