// Package controlplane runs a whole Kubernetes control plane for end-to-end tests: etcd and
// kube-apiserver (package apiserver), kube-controller-manager and kube-scheduler as processes,
// and the other binaries a test runs beside them (controllers under test), each logging to a
// file of its own. The end-to-end suite (test/e2e) and the differential suite
// (test/differential) start their clusters here.
package controlplane

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/openkarpenter/karpenter/pkg/test/apiserver"
)

// DisabledControllers are the kube-controller-manager controllers a cluster of simulated nodes
// runs without: nodelifecycle (no kubelet heartbeats, so it would taint and evict every node;
// the simulated cloud's kubelet lifts the not-ready taint itself), and those that need a
// signing key or a cloud.
var DisabledControllers = []string{"nodelifecycle", "serviceaccount-token", "nodeipam", "cloud-node-lifecycle"}

// Options shape a control plane.
type Options struct {
	// CRDFiles are the CRD manifests (files or folders) to install; nil installs the project's.
	CRDFiles []string
	// DisabledControllers are the kube-controller-manager controllers left off; nil means
	// DisabledControllers. A cluster whose nodes heartbeat (KWOK's) runs nodelifecycle.
	DisabledControllers []string
}

// ControlPlane is a running control plane and the processes started beside it.
type ControlPlane struct {
	// Env is the API server, with clients for it.
	Env *apiserver.Env
	// Dir holds the kubeconfig and every process's log.
	Dir string
	// Kubeconfig is the path of an administrator's kubeconfig.
	Kubeconfig string

	procs []*Process
}

// Start starts etcd and kube-apiserver with the CRDs, then kube-controller-manager and
// kube-scheduler, and returns once the controller-manager has made the default namespace's
// service account. On error the returned control plane, when not nil, holds what started, to
// Stop.
func Start(opts Options) (*ControlPlane, error) {
	assets, err := apiserver.Assets()
	if err != nil {
		return nil, err
	}
	for _, bin := range []string{"kube-controller-manager", "kube-scheduler"} {
		if _, err := os.Stat(filepath.Join(assets, bin)); err != nil {
			return nil, fmt.Errorf("%s is missing from %s: run hack/build-k8s.sh --full (make e2e does)", bin, assets)
		}
	}
	dir, err := os.MkdirTemp("", "karpenter-controlplane-")
	if err != nil {
		return nil, err
	}
	c := &ControlPlane{Dir: dir}
	if opts.CRDFiles == nil {
		c.Env, err = apiserver.Start()
	} else {
		c.Env, err = apiserver.StartWithCRDFiles(opts.CRDFiles...)
	}
	if err != nil {
		return c, err
	}
	if c.Kubeconfig, err = c.Env.KubeconfigFile(dir); err != nil {
		return c, err
	}
	disabled := opts.DisabledControllers
	if disabled == nil {
		disabled = DisabledControllers
	}
	controllers := "*"
	for _, name := range disabled {
		controllers += ",-" + name
	}
	kcm, err := c.Run("kube-controller-manager", filepath.Join(assets, "kube-controller-manager"),
		"--kubeconfig", c.Kubeconfig, "--leader-elect=false", "--use-service-account-credentials=false", "--secure-port=0",
		"--controllers="+controllers,
		"--concurrent-deployment-syncs=10", "--concurrent-replicaset-syncs=10", "--kube-api-qps=200", "--kube-api-burst=400")
	if err != nil {
		return c, err
	}
	scheduler, err := c.Run("kube-scheduler", filepath.Join(assets, "kube-scheduler"),
		"--kubeconfig", c.Kubeconfig, "--leader-elect=false", "--secure-port=0", "--kube-api-qps=200", "--kube-api-burst=400")
	if err != nil {
		return c, err
	}
	deadline := time.Now().Add(90 * time.Second)
	for {
		out, err := c.Kubectl("get", "serviceaccount", "default", "-n", "default", "-o", "name")
		if err == nil && strings.TrimSpace(out) != "" {
			return c, nil
		}
		if time.Now().After(deadline) {
			return c, fmt.Errorf("kube-controller-manager did not create the default service account within 90s:\n%s\n%s", kcm.Tail(), scheduler.Tail())
		}
		if kcm.Exited() || scheduler.Exited() {
			return c, fmt.Errorf("the control plane exited:\n%s\n%s", kcm.Tail(), scheduler.Tail())
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// Stop stops every process, last started first, then the API server and etcd. It removes Dir
// unless keepLogs, in which case it says where the logs are.
func (c *ControlPlane) Stop(keepLogs bool) {
	for i := len(c.procs) - 1; i >= 0; i-- {
		c.procs[i].Stop()
	}
	if c.Env != nil {
		_ = c.Env.Stop()
	}
	if keepLogs {
		fmt.Fprintf(os.Stderr, "controlplane: logs kept in %s\n", c.Dir)
		return
	}
	_ = os.RemoveAll(c.Dir)
}

// Run starts a binary in the background, its output going to <Dir>/<name>.log; Stop stops it.
func (c *ControlPlane) Run(name, bin string, args ...string) (*Process, error) {
	return c.RunWithEnv(name, nil, bin, args...)
}

// RunWithEnv is Run with environment variables ("KEY=value") added to the test's own.
func (c *ControlPlane) RunWithEnv(name string, env []string, bin string, args ...string) (*Process, error) {
	log := filepath.Join(c.Dir, name+".log")
	f, err := os.Create(log)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = f, f
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	p := &Process{Name: name, Log: log, cmd: cmd, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); f.Close(); close(p.done) }()
	c.procs = append(c.procs, p)
	return p, nil
}

// Kubectl runs kubectl against the cluster, with a minute to finish, and returns its combined
// output.
func (c *ControlPlane) Kubectl(args ...string) (string, error) {
	return c.kubectl(nil, args...)
}

// Apply applies manifests given as text (kubectl apply -f -).
func (c *ControlPlane) Apply(manifests string) error {
	out, err := c.kubectl(strings.NewReader(manifests), "apply", "-f", "-")
	if err != nil {
		return fmt.Errorf("kubectl apply: %w\n%s", err, out)
	}
	return nil
}

func (c *ControlPlane) kubectl(stdin *strings.Reader, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, c.Env.KubectlPath, append([]string{"--kubeconfig", c.Kubeconfig}, args...)...)
	if stdin != nil {
		cmd.Stdin = stdin
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// Process is a binary running beside the control plane, logging to a file.
type Process struct {
	// Name names the process and its log.
	Name string
	// Log is the path of its combined output.
	Log string

	cmd  *exec.Cmd
	done chan struct{}
}

// Exited says whether the process has ended.
func (p *Process) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Stop asks the process to stop (SIGTERM) and kills it after 10 seconds.
func (p *Process) Stop() {
	if p.Exited() {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		p.Kill()
	}
}

// Kill ends the process at once, as a crashed node or an OOM kill would.
func (p *Process) Kill() {
	_ = p.cmd.Process.Kill()
	<-p.done
}

// Tail is the end of the process's log, for failure messages.
func (p *Process) Tail() string {
	data, _ := os.ReadFile(p.Log)
	if len(data) > 6000 {
		data = data[len(data)-6000:]
	}
	return fmt.Sprintf("--- %s (%s):\n%s", p.Name, p.Log, data)
}
