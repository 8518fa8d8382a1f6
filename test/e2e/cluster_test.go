//go:build e2e

package e2e_test

import (
	"bytes"
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

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

// apiServerProcess finds the kube-apiserver envtest started for the suite (the one serving
// cp.env.Config.Host, as other suites may run beside this one) and returns its pid and command
// line.
func (c *cluster) apiServerProcess() (int, []string, error) {
	u, err := url.Parse(c.env.Config.Host)
	if err != nil {
		return 0, nil, err
	}
	want := "--secure-port=" + u.Port()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, nil, err
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		raw, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || len(raw) == 0 {
			continue
		}
		argv := strings.Split(strings.TrimRight(string(raw), "\x00"), "\x00")
		if filepath.Base(argv[0]) == "kube-apiserver" && slices.Contains(argv, want) {
			return pid, argv, nil
		}
	}
	return 0, nil, fmt.Errorf("no kube-apiserver with %s is running", want)
}

// killAPIServer ends the suite's kube-apiserver with SIGKILL, as a crashed control-plane node
// would, and returns its command line, for restartAPIServer.
func (c *cluster) killAPIServer() ([]string, error) {
	pid, argv, err := c.apiServerProcess()
	if err != nil {
		return nil, err
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		return nil, fmt.Errorf("killing kube-apiserver %d: %w", pid, err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; {
		if _, err := os.Stat(fmt.Sprintf("/proc/%d/cmdline", pid)); os.IsNotExist(err) {
			break
		}
		if raw, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); strings.Contains(string(raw), ") Z ") {
			break // a zombie until envtest reaps it: dead all the same
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("kube-apiserver %d still runs 10s after SIGKILL", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return argv, nil
}

// startAPIServer runs a kube-apiserver with the command line argv (its flags replaced by
// override, "--name=value" each), as the suite's process named name, and waits until it
// answers /readyz; it returns when it first did.
func (c *cluster) startAPIServer(name string, argv []string, override ...string) (*process, time.Time, error) {
	args := slices.Clone(argv[1:])
	for _, o := range override {
		flag, _, _ := strings.Cut(o, "=")
		args = slices.DeleteFunc(args, func(a string) bool { return strings.HasPrefix(a, flag+"=") })
		args = append(args, o)
	}
	p, err := c.start(name, argv[0], args...)
	if err != nil {
		return nil, time.Time{}, err
	}
	port := ""
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, "--secure-port="); ok {
			port = v
		}
	}
	cfg := rest.CopyConfig(c.env.Config)
	cfg.Host = "https://127.0.0.1:" + port
	cfg.Timeout = 2 * time.Second
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return p, time.Time{}, err
	}
	for deadline := time.Now().Add(2 * time.Minute); ; {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		body, err := kube.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		cancel()
		if err == nil && strings.TrimSpace(string(body)) == "ok" {
			return p, time.Now(), nil
		}
		if p.exited() {
			return p, time.Time{}, fmt.Errorf("%s exited:\n%s", name, p.tail())
		}
		if time.Now().After(deadline) {
			return p, time.Time{}, fmt.Errorf("%s not ready within 2 minutes: %v\n%s", name, err, p.tail())
		}
		time.Sleep(50 * time.Millisecond)
	}
}
