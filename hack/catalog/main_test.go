package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// TestCatalogUpToDate regenerates the catalog and the cross-check data from the shared data file
// and compares them with the committed files. Set CATALOG_INPUT to the data file's path; by
// default it is looked for next to the repository (../shared/data), and the test is skipped
// when it is not there.
func TestCatalogUpToDate(t *testing.T) {
	input := os.Getenv("CATALOG_INPUT")
	if input == "" {
		input = filepath.Join("..", "..", "..", "shared", "data", "ec2-instance-types.json")
	}
	if _, err := os.Stat(input); err != nil {
		t.Skipf("no input data (%v); set CATALOG_INPUT", err)
	}
	dir := t.TempDir()
	out, testdata := filepath.Join(dir, "catalog.csv.gz"), filepath.Join(dir, "alloc.csv")
	if err := run(input, out, testdata, io.Discard); err != nil {
		t.Fatal(err)
	}
	for generated, committed := range map[string]string{
		out:      filepath.Join("..", "..", "pkg", "cloudprovider", "catalog", "ec2-instance-types.csv.gz"),
		testdata: filepath.Join("..", "..", "pkg", "cloudprovider", "testdata", "karpenter-allocatable.csv"),
	} {
		got, err := os.ReadFile(generated)
		if err != nil {
			t.Fatal(err)
		}
		want, err := os.ReadFile(committed)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s is stale; run go run ./hack/catalog %s", committed, input)
		}
	}
}
