//go:build e2e

package e2e_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/openkarpenter/karpenter/pkg/test/apiserver"
)

// cluster is the control plane every test shares.
type cluster struct {
	env        *apiserver.Env
	dir        string // logs, kubeconfig, binaries
	kubeconfig string
	karpenter  string // the binary under test
	procs      []*process
}

var cp *cluster

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	c, err := startCluster()
	if err != nil {
		fmt.Fprintf(os.Stderr, "e2e: %v\n", err)
		if c != nil {
			c.stop()
		}
		return 1
	}
	cp = c
	code := m.Run()
	c.stop()
	return code
}

// startCluster starts etcd and kube-apiserver (with the project's CRDs), then
// kube-controller-manager and kube-scheduler against them, and builds the karpenter binary.
func startCluster() (*cluster, error) {
	assets, err := apiserver.Assets()
	if err != nil {
		return nil, err
	}
	for _, bin := range []string{"kube-controller-manager", "kube-scheduler"} {
		if _, err := os.Stat(filepath.Join(assets, bin)); err != nil {
			return nil, fmt.Errorf("%s is missing from %s: run hack/build-k8s.sh --full (make e2e does)", bin, assets)
		}
	}
	dir, err := os.MkdirTemp("", "karpenter-e2e-")
	if err != nil {
		return nil, err
	}
	c := &cluster{dir: dir}
	build := exec.Command("go", "build", "-o", filepath.Join(dir, "karpenter"), "./cmd/karpenter")
	build.Dir = filepath.Join("..", "..")
	if out, err := build.CombinedOutput(); err != nil {
		return c, fmt.Errorf("building karpenter: %v\n%s", err, out)
	}
	c.karpenter = filepath.Join(dir, "karpenter")
	if c.env, err = apiserver.Start(); err != nil {
		return c, err
	}
	if c.kubeconfig, err = c.env.KubeconfigFile(dir); err != nil {
		return c, err
	}
	kcm, err := c.start("kube-controller-manager", filepath.Join(assets, "kube-controller-manager"),
		"--kubeconfig", c.kubeconfig, "--leader-elect=false", "--use-service-account-credentials=false", "--secure-port=0",
		// No kubelets heartbeat: without nodelifecycle their Nodes are never tainted and evicted.
		"--controllers=*,-nodelifecycle,-serviceaccount-token,-nodeipam,-cloud-node-lifecycle",
		"--concurrent-deployment-syncs=10", "--concurrent-replicaset-syncs=10", "--kube-api-qps=200", "--kube-api-burst=400")
	if err != nil {
		return c, err
	}
	scheduler, err := c.start("kube-scheduler", filepath.Join(assets, "kube-scheduler"),
		"--kubeconfig", c.kubeconfig, "--leader-elect=false", "--secure-port=0", "--kube-api-qps=200", "--kube-api-burst=400")
	if err != nil {
		return c, err
	}
	// Both are up once the controller-manager has made the default namespace's service account.
	deadline := time.Now().Add(90 * time.Second)
	for {
		out, err := c.kubectlOutput("get", "serviceaccount", "default", "-n", "default", "-o", "name")
		if err == nil && strings.TrimSpace(out) != "" {
			break
		}
		if time.Now().After(deadline) {
			return c, fmt.Errorf("kube-controller-manager did not create the default service account within 90s:\n%s\n%s", kcm.tail(), scheduler.tail())
		}
		if kcm.exited() || scheduler.exited() {
			return c, fmt.Errorf("the control plane exited:\n%s\n%s", kcm.tail(), scheduler.tail())
		}
		time.Sleep(200 * time.Millisecond)
	}
	return c, nil
}

func (c *cluster) stop() {
	for i := len(c.procs) - 1; i >= 0; i-- {
		c.procs[i].stop()
	}
	if c.env != nil {
		_ = c.env.Stop()
	}
	if os.Getenv("E2E_KEEP") == "" {
		_ = os.RemoveAll(c.dir)
	} else {
		fmt.Fprintf(os.Stderr, "e2e: logs kept in %s\n", c.dir)
	}
}

// process is a binary the suite runs, logging to a file.
type process struct {
	name string
	cmd  *exec.Cmd
	log  string
	done chan struct{}
}

// start runs a binary in the background, its output going to <dir>/<name>.log.
func (c *cluster) start(name, bin string, args ...string) (*process, error) {
	log := filepath.Join(c.dir, name+".log")
	f, err := os.Create(log)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	p := &process{name: name, cmd: cmd, log: log, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); f.Close(); close(p.done) }()
	c.procs = append(c.procs, p)
	return p, nil
}

func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// stop asks the process to stop (SIGTERM) and kills it after 10 seconds.
func (p *process) stop() {
	if p.exited() {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		p.kill()
	}
}

// kill ends the process at once, as a crashed node or an OOM kill would.
func (p *process) kill() {
	_ = p.cmd.Process.Kill()
	<-p.done
}

// tail is the end of the process's log, for failure messages.
func (p *process) tail() string {
	data, _ := os.ReadFile(p.log)
	if len(data) > 6000 {
		data = data[len(data)-6000:]
	}
	return fmt.Sprintf("--- %s (%s):\n%s", p.name, p.log, data)
}

// kubectl runs kubectl against the cluster and fails the test on error.
func kubectl(t *testing.T, args ...string) string {
	t.Helper()
	out, err := cp.kubectlOutput(args...)
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// kubectlApply applies manifests given as text.
func kubectlApply(t *testing.T, manifests string) {
	t.Helper()
	cmd := exec.Command(cp.env.KubectlPath, "--kubeconfig", cp.kubeconfig, "apply", "-f", "-")
	cmd.Stdin = strings.NewReader(manifests)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("kubectl apply: %v\n%s", err, out)
	}
}

func (c *cluster) kubectlOutput(args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, c.env.KubectlPath, append([]string{"--kubeconfig", c.kubeconfig}, args...)...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}
