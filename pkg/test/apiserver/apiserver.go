// Package apiserver runs a real kube-apiserver and etcd for tests (controller-runtime's envtest)
// with the project's CRDs installed. The binaries come from hack/build-k8s.sh (`make
// k8s-binaries`), found through KUBEBUILDER_ASSETS or the repository's bin/k8s folder.
//
// A package's tests share one server:
//
//	var env *apiserver.Env
//
//	func TestMain(m *testing.M) { os.Exit(apiserver.Main(m, &env)) }
package apiserver

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/openkarpenter/karpenter/config/crd"
	"github.com/openkarpenter/karpenter/pkg/apis"
)

// Env is a running API server with the project's CRDs installed.
type Env struct {
	// Config reaches the API server as a cluster administrator.
	Config *rest.Config
	// Client is a controller-runtime client with the project's scheme (no cache).
	Client client.Client
	// Kube is a client-go clientset, for subresources such as eviction.
	Kube kubernetes.Interface
	// Scheme has the Kubernetes built-in types and the project's APIs.
	Scheme *runtime.Scheme
	// KubectlPath is the kubectl built beside the server.
	KubectlPath string

	env      *envtest.Environment
	dir      string // holds the audit policy and log
	auditLog string
}

// Assets returns the folder holding etcd and kube-apiserver: KUBEBUILDER_ASSETS when set, else
// bin/k8s at the repository root. It fails with the command to run when they are missing.
func Assets() (string, error) {
	dir := os.Getenv("KUBEBUILDER_ASSETS")
	if dir == "" {
		root, err := repoRoot()
		if err != nil {
			return "", err
		}
		dir = filepath.Join(root, "bin", "k8s")
	}
	for _, bin := range []string{"etcd", "kube-apiserver"} {
		if _, err := os.Stat(filepath.Join(dir, bin)); err != nil {
			return "", fmt.Errorf("%s not found in %s: run `make k8s-binaries` (hack/build-k8s.sh) or set KUBEBUILDER_ASSETS", bin, dir)
		}
	}
	return filepath.Abs(dir)
}

func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("cannot find the repository root (go.mod) above the working directory")
		}
		dir = parent
	}
}

// Start starts etcd and kube-apiserver and installs the CRDs.
func Start() (*Env, error) {
	crds, err := crd.All()
	if err != nil {
		return nil, err
	}
	return start(envtest.CRDInstallOptions{CRDs: crds})
}

// StartWithCRDFiles starts etcd and kube-apiserver and installs the CRDs in the manifest files
// or folders at paths instead of the project's: another implementation of the same APIs, such
// as Karpenter's own, which the differential suite runs beside ours.
func StartWithCRDFiles(paths ...string) (*Env, error) {
	if len(paths) == 0 {
		return nil, errors.New("no CRD manifests given")
	}
	return start(envtest.CRDInstallOptions{Paths: paths, ErrorIfPathMissing: true})
}

func start(install envtest.CRDInstallOptions) (*Env, error) {
	assets, err := Assets()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "apiserver-audit-")
	if err != nil {
		return nil, err
	}
	policy, auditLog := filepath.Join(dir, "policy.yaml"), filepath.Join(dir, "audit.log")
	if err := os.WriteFile(policy, []byte(evictionAuditPolicy), 0o600); err != nil {
		return nil, err
	}
	scheme := apis.NewScheme()
	install.Scheme = scheme
	e := &envtest.Environment{
		BinaryAssetsDirectory: assets,
		CRDInstallOptions:     install,
		Scheme:                scheme,
	}
	e.ControlPlane.GetAPIServer().Configure().
		Set("audit-policy-file", policy).
		Set("audit-log-path", auditLog).
		Set("audit-log-mode", "blocking").
		Set("audit-log-format", "json")
	cfg, err := e.Start()
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("starting kube-apiserver and etcd from %s: %w", assets, err)
	}
	// Tests are the only client: do not throttle them client-side.
	cfg.QPS, cfg.Burst = 1000, 2000
	env := &Env{Config: cfg, Scheme: scheme, env: e, KubectlPath: filepath.Join(assets, "kubectl"), dir: dir, auditLog: auditLog}
	if env.Client, err = client.New(cfg, client.Options{Scheme: scheme}); err != nil {
		_ = env.Stop()
		return nil, err
	}
	if env.Kube, err = kubernetes.NewForConfig(cfg); err != nil {
		_ = env.Stop()
		return nil, err
	}
	return env, nil
}

// Stop stops the API server and etcd and removes the audit log.
func (e *Env) Stop() error {
	err := e.env.Stop()
	return errors.Join(err, os.RemoveAll(e.dir))
}

// KubeconfigFile writes a kubeconfig for the server into dir and returns its path, for tests
// that run kubectl or the karpenter binary.
func (e *Env) KubeconfigFile(dir string) (string, error) {
	user, err := e.env.ControlPlane.AddUser(envtest.User{Name: "admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return "", err
	}
	data, err := user.KubeConfig()
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, "kubeconfig")
	return path, os.WriteFile(path, data, 0o600)
}

// Main starts the server, stores it in *env, runs the package's tests and stops the server. It
// returns the exit code for os.Exit. When the server cannot start, every test fails with why.
func Main(m *testing.M, env **Env) int {
	ctrllog.SetLogger(logr.Discard())
	started, err := Start()
	if err != nil {
		fmt.Fprintf(os.Stderr, "apiserver: %v\n", err)
		return 1
	}
	*env = started
	code := m.Run()
	if err := started.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "apiserver: stopping: %v\n", err)
	}
	return code
}
