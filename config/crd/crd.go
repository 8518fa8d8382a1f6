// Package crd embeds the CustomResourceDefinitions generated from pkg/apis by controller-gen
// (`make generate`), so the binary and the tests install exactly what is committed here.
package crd

import (
	"embed"
	"fmt"
	"io/fs"
	"sort"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

//go:embed *.yaml
var files embed.FS

// All returns every CRD of the project, sorted by name.
func All() ([]*apiextensionsv1.CustomResourceDefinition, error) {
	names, err := fs.Glob(files, "*.yaml")
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	crds := make([]*apiextensionsv1.CustomResourceDefinition, 0, len(names))
	for _, name := range names {
		data, err := files.ReadFile(name)
		if err != nil {
			return nil, err
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.UnmarshalStrict(data, crd); err != nil {
			return nil, fmt.Errorf("decoding %s: %w", name, err)
		}
		crds = append(crds, crd)
	}
	return crds, nil
}

// Manifests returns the raw YAML of every CRD keyed by file name.
func Manifests() (map[string][]byte, error) {
	names, err := fs.Glob(files, "*.yaml")
	if err != nil {
		return nil, err
	}
	out := make(map[string][]byte, len(names))
	for _, name := range names {
		if out[name], err = files.ReadFile(name); err != nil {
			return nil, err
		}
	}
	return out, nil
}
