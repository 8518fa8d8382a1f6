package apis_test

import (
	"reflect"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// TestPrinterColumnsAsKarpenter holds the columns kubectl get prints for NodePools, NodeClaims
// and EC2NodeClasses (the CRDs' additionalPrinterColumns, generated from the +kubebuilder:printcolumn
// markers) to those of Karpenter's published CRDs, column for column and in order.
func TestPrinterColumnsAsKarpenter(t *testing.T) {
	published := readCRDs(t, "testdata/karpenter")
	ours := readCRDs(t, "../../config/crd")
	for name, theirs := range published {
		mine, ok := ours[name]
		if !ok {
			t.Errorf("%s: no such CRD in config/crd", name)
			continue
		}
		if !reflect.DeepEqual(printerColumns(mine), printerColumns(theirs)) {
			t.Errorf("%s printer columns differ from Karpenter's:\n ours:      %+v\n Karpenter: %+v", name, printerColumns(mine), printerColumns(theirs))
		}
	}
}

// readCRDs reads the CRDs of a directory by name.
func readCRDs(t *testing.T, dir string) map[string]*apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	opts := envtest.CRDInstallOptions{Paths: []string{dir}, ErrorIfPathMissing: true}
	if err := envtest.ReadCRDFiles(&opts); err != nil {
		t.Fatalf("reading %s: %v", dir, err)
	}
	out := map[string]*apiextensionsv1.CustomResourceDefinition{}
	for _, crd := range opts.CRDs {
		out[crd.Name] = crd
	}
	if len(out) == 0 {
		t.Fatalf("no CRDs in %s", dir)
	}
	return out
}

// printerColumns are the additionalPrinterColumns of each served version, by version name.
func printerColumns(crd *apiextensionsv1.CustomResourceDefinition) map[string][]apiextensionsv1.CustomResourceColumnDefinition {
	out := map[string][]apiextensionsv1.CustomResourceColumnDefinition{}
	for _, v := range crd.Spec.Versions {
		if v.Served {
			out[v.Name] = v.AdditionalPrinterColumns
		}
	}
	return out
}
