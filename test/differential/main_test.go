package differential_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
)

// kwokVersion is the KWOK controller that keeps upstream's nodes heartbeating and runs their
// pods (installed with `go install`, not required by go.mod: nothing here imports it).
const kwokVersion = "v0.8.0"

// assets are the binaries and files every run shares, made once by TestMain.
type assets struct {
	dir           string // holds everything below
	ours          string // this project's karpenter binary
	upstream      string // Karpenter v1.15.0's controller with its KWOK cloud provider
	kwok          string // the KWOK controller
	kwokStages    string // the KWOK stages: nodes initialize at once and heartbeat, pods run at once
	upstreamCRDs  []string
	instanceTypes string // our catalog, as upstream's INSTANCE_TYPES_FILE_PATH reads it
	catalog       *catalog
}

var shared *assets

func TestMain(m *testing.M) {
	ctrllog.SetLogger(logr.Discard())
	a, err := prepare()
	if err != nil {
		fmt.Fprintf(os.Stderr, "differential: %v\n", err)
		os.Exit(1)
	}
	shared = a
	code := m.Run()
	if os.Getenv("DIFFERENTIAL_KEEP") == "" {
		_ = os.RemoveAll(a.dir)
	}
	os.Exit(code)
}

// prepare builds the three binaries (the Go build cache makes a rerun take seconds) and writes
// the upstream controller's instance types and KWOK's stages.
func prepare() (*assets, error) {
	dir, err := os.MkdirTemp("", "karpenter-differential-")
	if err != nil {
		return nil, err
	}
	a := &assets{
		dir:           dir,
		ours:          filepath.Join(dir, "karpenter"),
		upstream:      filepath.Join(dir, "karpenter-kwok"),
		kwok:          filepath.Join(dir, "kwok"),
		kwokStages:    filepath.Join(dir, "kwok-stages.yaml"),
		instanceTypes: filepath.Join(dir, "instance-types.json"),
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		return nil, err
	}
	if err := goCommand(root, nil, "build", "-o", a.ours, "./cmd/karpenter"); err != nil {
		return nil, err
	}
	if err := goCommand(".", nil, "build", "-o", a.upstream, "sigs.k8s.io/karpenter/kwok"); err != nil {
		return nil, err
	}
	if err := goCommand(".", []string{"GOBIN=" + dir, "GOFLAGS="}, "install", "sigs.k8s.io/kwok/cmd/kwok@"+kwokVersion); err != nil {
		return nil, err
	}
	karpenterDir, err := moduleDir(".", "sigs.k8s.io/karpenter")
	if err != nil {
		return nil, err
	}
	a.upstreamCRDs = []string{
		filepath.Join(karpenterDir, "kwok", "charts", "crds"),
		filepath.Join(karpenterDir, "kwok", "apis", "crds"),
	}
	kwokDir, err := moduleDir(".", "sigs.k8s.io/kwok@"+kwokVersion)
	if err != nil {
		return nil, err
	}
	if err := writeKWOKStages(kwokDir, a.kwokStages); err != nil {
		return nil, err
	}
	if a.catalog, err = loadCatalog(); err != nil {
		return nil, err
	}
	if err := a.catalog.writeUpstreamInstanceTypes(a.instanceTypes); err != nil {
		return nil, err
	}
	return a, nil
}

// goCommand runs the go command in dir with extra environment variables.
func goCommand(dir string, env []string, args ...string) error {
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return nil
}

// moduleDir is the module cache folder of a module: the version this module requires, or the
// one named with @version, downloaded when missing.
func moduleDir(dir, module string) (string, error) {
	cmd := exec.Command("go", "mod", "download", "-json", module)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("go mod download %s: %v\n%s", module, err, out)
	}
	var info struct{ Dir, Error string }
	if err := json.Unmarshal(out, &info); err != nil {
		return "", fmt.Errorf("go mod download %s: %w", module, err)
	}
	if info.Dir == "" {
		return "", fmt.Errorf("go mod download %s: %s", module, info.Error)
	}
	return info.Dir, nil
}

// writeKWOKStages writes the stages of KWOK's "fast" set (kustomize/stage/fast: nodes
// initialize at once and heartbeat with a lease, pods run at once and go when deleted) into one
// --config file.
func writeKWOKStages(kwokDir, path string) error {
	var docs []string
	for _, f := range []string{
		"node/fast/node-initialize.yaml",
		"node/heartbeat-with-lease/node-heartbeat-with-lease.yaml",
		"pod/fast/pod-ready.yaml",
		"pod/fast/pod-complete.yaml",
		"pod/fast/pod-delete.yaml",
	} {
		data, err := os.ReadFile(filepath.Join(kwokDir, "kustomize", "stage", f))
		if err != nil {
			return fmt.Errorf("reading KWOK's stage %s: %w", f, err)
		}
		docs = append(docs, strings.TrimPrefix(string(data), "---\n"))
	}
	return os.WriteFile(path, []byte(strings.Join(docs, "\n---\n")), 0o600)
}
