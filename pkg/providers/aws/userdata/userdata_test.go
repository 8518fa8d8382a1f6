package userdata

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"k8s.io/utils/ptr"

	awsv1 "github.com/openkarpenter/karpenter/pkg/apis/aws/v1"
)

const kopsNodeup = "#!/bin/bash\n" +
	"set -o errexit\nset -o nounset\nset -o pipefail\n\n" +
	"NODEUP_URL_AMD64=https://artifacts.k8s.io/binaries/kops/1.30.0/linux/amd64/nodeup\n" +
	"NODEUP_HASH_AMD64=0123456789abcdef\n\n" +
	"export AWS_REGION=us-west-2\n\n" +
	"function ensure-install-dir() {\n  INSTALL_DIR=\"/opt/kops\"\n  mkdir -p ${INSTALL_DIR}/bin\n  cd ${INSTALL_DIR}\n}\n\n" +
	"cat > conf/kube_env.yaml << '__EOF_KUBE_ENV'\n" +
	"CloudProvider: aws\nConfigBase: s3://bucket/cluster\nInstanceGroupName: nodes\n" +
	"__EOF_KUBE_ENV\n\n" +
	"\tindented with a tab and trailing spaces   \r\n" +
	"echo \"done — unicode ✓\" 'single' \"$(date)\"\n" +
	"download-release\necho \"== nodeup node config done ==\"\n"

func TestCustomPassesUserDataThrough(t *testing.T) {
	for name, ud := range map[string]*string{
		"kOps nodeup script":  ptr.To(kopsNodeup),
		"no trailing newline": ptr.To("#!/bin/sh\necho hi"),
		"nil":                 nil,
		"empty":               ptr.To(""),
	} {
		t.Run(name, func(t *testing.T) {
			o := baseOptions()
			o.Kubelet = nodeClassKubelet()
			o.UserData = ud
			for _, render := range []func(Options) (string, error){Custom, func(o Options) (string, error) { return Render(awsv1.AMIFamilyCustom, o) }} {
				got, err := render(o)
				if err != nil {
					t.Fatal(err)
				}
				want := ""
				if ud != nil {
					want = *ud
				}
				if got != want {
					t.Fatalf("Custom changed the user data:\n got %q\nwant %q", got, want)
				}
			}
		})
	}
}

func TestRenderDispatch(t *testing.T) {
	o := baseOptions()
	for family, check := range map[string]func(string) bool{
		"":                          func(s string) bool { return strings.Contains(s, "kind: NodeConfig") },
		awsv1.AMIFamilyAL2023:       func(s string) bool { return strings.Contains(s, "kind: NodeConfig") },
		awsv1.AMIFamilyAL2:          func(s string) bool { return strings.Contains(s, "/etc/eks/bootstrap.sh") },
		awsv1.AMIFamilyBottlerocket: func(s string) bool { return strings.Contains(s, "[settings.kubernetes]") },
		awsv1.AMIFamilyCustom:       func(s string) bool { return s == "" },
		awsv1.AMIFamilyWindows2019:  func(s string) bool { return strings.Contains(s, "Start-EKSBootstrap.ps1") },
		awsv1.AMIFamilyWindows2022:  func(s string) bool { return strings.Contains(s, "Start-EKSBootstrap.ps1") },
		awsv1.AMIFamilyWindows2025:  func(s string) bool { return strings.Contains(s, "Start-EKSBootstrap.ps1") },
	} {
		got, err := Render(family, o)
		if err != nil {
			t.Fatalf("Render(%q): %v", family, err)
		}
		if !check(got) {
			t.Errorf("Render(%q) rendered the wrong family:\n%s", family, got)
		}
	}
	for _, family := range []string{"windows2022", "al2023", "Ubuntu"} {
		_, err := Render(family, o)
		if err == nil {
			t.Fatalf("Render(%q) succeeded", family)
		}
		for _, want := range []string{"spec.amiFamily", family, "AL2023", "AL2", "Bottlerocket", "Custom"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("Render(%q) error %q does not mention %q", family, err, want)
			}
		}
	}
}

func TestAL2023(t *testing.T) {
	userNodeConfig := "apiVersion: node.eks.aws/v1alpha1\nkind: NodeConfig\nspec:\n  kubelet:\n    config:\n      shutdownGracePeriod: 30s\n      maxPods: 110\n"
	userScript := "#!/bin/bash\necho 'hello from the user'\n"
	userMIME := "MIME-Version: 1.0\n" +
		"Content-Type: multipart/mixed; boundary=\"BOUNDARY\"\n\n" +
		"--BOUNDARY\n" +
		"Content-Type: application/node.eks.aws\n\n" +
		userNodeConfig + "\n" +
		"--BOUNDARY\n" +
		"Content-Type: text/x-shellscript; charset=\"us-ascii\"\n" +
		"Content-Transfer-Encoding: quoted-printable\n\n" +
		"#!/bin/bash\necho a=3Db\n" +
		"\n--BOUNDARY--\n"

	tests := []struct {
		name     string
		userData *string
		// wantUser are the user's parts, content type and body, expected before Karpenter's.
		wantUser    [][2]string
		wantMaxPods any
	}{
		{name: "no user data", wantMaxPods: float64(29)},
		{name: "empty user data", userData: ptr.To("  \n"), wantMaxPods: float64(29)},
		{
			name:     "user NodeConfig",
			userData: ptr.To(userNodeConfig),
			wantUser: [][2]string{{contentTypeNodeConfig, userNodeConfig}},
			// The user's maxPods stands: the computed default is left out.
			wantMaxPods: nil,
		},
		{
			name:        "user shell script",
			userData:    ptr.To(userScript),
			wantUser:    [][2]string{{contentTypeShellScript, userScript}},
			wantMaxPods: float64(29),
		},
		{
			name:        "user cloud-config",
			userData:    ptr.To("#cloud-config\npackages: [jq]\n"),
			wantUser:    [][2]string{{contentTypeCloudConfig, "#cloud-config\npackages: [jq]\n"}},
			wantMaxPods: float64(29),
		},
		{
			name:     "user MIME document",
			userData: ptr.To(userMIME),
			wantUser: [][2]string{
				{"application/node.eks.aws", userNodeConfig},
				{`text/x-shellscript; charset="us-ascii"`, "#!/bin/bash\necho a=3Db\n"},
			},
			wantMaxPods: nil,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := baseOptions()
			o.UserData = tt.userData
			o.InstanceStorePolicy = ptr.To(awsv1.InstanceStorePolicyRAID0)
			out, err := AL2023(o)
			if err != nil {
				t.Fatal(err)
			}
			parts := parseMIMEOutput(t, out)
			if len(parts) != len(tt.wantUser)+1 {
				t.Fatalf("got %d parts, want %d user parts + Karpenter's:\n%s", len(parts), len(tt.wantUser), out)
			}
			for i, w := range tt.wantUser {
				if parts[i].contentType != w[0] || parts[i].body != w[1] {
					t.Errorf("part %d = (%q, %q), want (%q, %q)", i, parts[i].contentType, parts[i].body, w[0], w[1])
				}
			}
			if strings.Contains(tt.name, "MIME") {
				if got := parts[1].header["Content-Transfer-Encoding"]; !reflect.DeepEqual(got, []string{"quoted-printable"}) {
					t.Errorf("user part's Content-Transfer-Encoding = %q, want it kept", got)
				}
			}
			last := parts[len(parts)-1]
			if last.contentType != contentTypeNodeConfig {
				t.Fatalf("Karpenter's part has content type %q", last.contentType)
			}
			nc := decodeNodeConfig(t, last.body)
			if nc.APIVersion != "node.eks.aws/v1alpha1" || nc.Kind != "NodeConfig" {
				t.Errorf("NodeConfig identity = %s %s", nc.APIVersion, nc.Kind)
			}
			c := nc.Spec.Cluster
			if c.Name != o.ClusterName || c.APIServerEndpoint != o.ClusterEndpoint || c.CertificateAuthority != testCAB64 || c.CIDR != "10.100.0.0/16" {
				t.Errorf("cluster = %+v", c)
			}
			if got := nc.Spec.Kubelet.Config["maxPods"]; !reflect.DeepEqual(got, tt.wantMaxPods) {
				t.Errorf("maxPods = %v, want %v", got, tt.wantMaxPods)
			}
			wantFlags := []string{"--node-labels=karpenter.sh/capacity-type=on-demand,karpenter.sh/nodepool=default,team=a"}
			if !reflect.DeepEqual(nc.Spec.Kubelet.Flags, wantFlags) {
				t.Errorf("flags = %q, want %q", nc.Spec.Kubelet.Flags, wantFlags)
			}
			wantTaints := []any{
				map[string]any{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"},
				map[string]any{"key": "karpenter.sh/unregistered", "effect": "NoExecute"},
			}
			if got := nc.Spec.Kubelet.Config["registerWithTaints"]; !reflect.DeepEqual(got, wantTaints) {
				t.Errorf("registerWithTaints = %v, want %v", got, wantTaints)
			}
			if nc.Spec.Instance.LocalStorage.Strategy != "RAID0" {
				t.Errorf("instance.localStorage.strategy = %q, want RAID0", nc.Spec.Instance.LocalStorage.Strategy)
			}
		})
	}
}

func TestAL2023ExplicitKubeletWinsOverUserNodeConfig(t *testing.T) {
	o := baseOptions()
	o.Kubelet = &awsv1.KubeletConfiguration{MaxPods: ptr.To[int32](42)}
	o.UserData = ptr.To("apiVersion: node.eks.aws/v1alpha1\nkind: NodeConfig\nspec:\n  kubelet:\n    config:\n      maxPods: 110\n")
	out, err := AL2023(o)
	if err != nil {
		t.Fatal(err)
	}
	parts := parseMIMEOutput(t, out)
	nc := decodeNodeConfig(t, parts[len(parts)-1].body)
	// Karpenter's NodeConfig is last, so nodeadm applies 42.
	if got := nc.Spec.Kubelet.Config["maxPods"]; got != float64(42) {
		t.Errorf("maxPods = %v, want 42", got)
	}
}

// TestAL2023KubeletFieldsKarpenterDoesNotRead: every field of the EC2NodeClass's kubelet
// configuration reaches nodeadm's NodeConfig as written, and Karpenter's own settings win over
// the user's NodeConfig for them too.
func TestAL2023KubeletFieldsKarpenterDoesNotRead(t *testing.T) {
	o := baseOptions()
	o.Kubelet = &awsv1.KubeletConfiguration{}
	if err := json.Unmarshal([]byte(`{"maxPods": 42, "containerLogMaxSize": "50Mi", "containerLogMaxFiles": 3, "featureGates": {"A": true}, "shutdownGracePeriod": "45s"}`), o.Kubelet); err != nil {
		t.Fatal(err)
	}
	o.UserData = ptr.To("apiVersion: node.eks.aws/v1alpha1\nkind: NodeConfig\nspec:\n  kubelet:\n    config:\n      containerLogMaxSize: 10Mi\n")
	out, err := AL2023(o)
	if err != nil {
		t.Fatal(err)
	}
	parts := parseMIMEOutput(t, out)
	config := decodeNodeConfig(t, parts[len(parts)-1].body).Spec.Kubelet.Config
	want := map[string]any{"maxPods": float64(42), "containerLogMaxSize": "50Mi", "containerLogMaxFiles": float64(3),
		"featureGates": map[string]any{"A": true}, "shutdownGracePeriod": "45s"}
	for k, v := range want {
		if !reflect.DeepEqual(config[k], v) {
			t.Errorf("kubelet config %s = %#v, want %#v", k, config[k], v)
		}
	}
}

func TestAL2023WithoutCABundleOrLabels(t *testing.T) {
	o := Options{ClusterName: "c", ClusterEndpoint: "https://x", ClusterCIDR: "fd00::/108"}
	out, err := AL2023(o)
	if err != nil {
		t.Fatal(err)
	}
	parts := parseMIMEOutput(t, out)
	nc := decodeNodeConfig(t, parts[0].body)
	if nc.Spec.Cluster.CertificateAuthority != "" || nc.Spec.Cluster.CIDR != "fd00::/108" {
		t.Errorf("cluster = %+v", nc.Spec.Cluster)
	}
	if nc.Spec.Kubelet.Config != nil || nc.Spec.Kubelet.Flags != nil || nc.Spec.Instance.LocalStorage.Strategy != "" {
		t.Errorf("unexpected kubelet/instance settings: %+v", nc.Spec)
	}
}

func TestMIMEBoundaryClash(t *testing.T) {
	o := baseOptions()
	o.UserData = ptr.To("#!/bin/bash\necho '--//'\n")
	out, err := AL2023(o)
	if err != nil {
		t.Fatal(err)
	}
	parts := parseMIMEOutput(t, out)
	if len(parts) != 2 || parts[0].body != *o.UserData {
		t.Fatalf("user part mangled: %+v", parts)
	}
}

func TestAL2(t *testing.T) {
	userScript := "#!/bin/bash\necho pre-bootstrap\n"
	for _, tt := range []struct {
		name     string
		userData *string
		wantUser [][2]string
	}{
		{name: "no user data"},
		{name: "shell script", userData: ptr.To(userScript), wantUser: [][2]string{{contentTypeShellScript, userScript}}},
		{
			name: "MIME document",
			userData: ptr.To("MIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=\"==X==\"\r\n\r\n" +
				"--==X==\r\nContent-Type: text/cloud-config\r\n\r\n#cloud-config\nruncmd: [ls]\n\r\n--==X==--\r\n"),
			wantUser: [][2]string{{"text/cloud-config", "#cloud-config\nruncmd: [ls]\n"}},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			o := baseOptions()
			o.UserData = tt.userData
			o.InstanceStorePolicy = ptr.To(awsv1.InstanceStorePolicyRAID0)
			out, err := AL2(o)
			if err != nil {
				t.Fatal(err)
			}
			parts := parseMIMEOutput(t, out)
			if len(parts) != len(tt.wantUser)+1 {
				t.Fatalf("got %d parts, want %d:\n%s", len(parts), len(tt.wantUser)+1, out)
			}
			for i, w := range tt.wantUser {
				if parts[i].contentType != w[0] || parts[i].body != w[1] {
					t.Errorf("part %d = (%q, %q), want (%q, %q)", i, parts[i].contentType, parts[i].body, w[0], w[1])
				}
			}
			script := parts[len(parts)-1]
			if script.contentType != contentTypeShellScript || !strings.HasPrefix(script.body, "#!/bin/bash") {
				t.Fatalf("Karpenter's part = %q:\n%s", script.contentType, script.body)
			}
			args := bootstrapArgs(t, script.body)
			want := map[string]string{
				"":                     "test-cluster",
				"--apiserver-endpoint": o.ClusterEndpoint,
				"--b64-cluster-ca":     testCAB64,
				"--use-max-pods":       "false",
				"--local-disks":        "raid0",
				"--kubelet-extra-args": args["--kubelet-extra-args"],
			}
			if !reflect.DeepEqual(args, want) {
				t.Errorf("bootstrap.sh args = %v, want %v", args, want)
			}
			flags := kubeletFlags(t, args["--kubelet-extra-args"])
			wantFlags := map[string]string{
				"--node-labels":          "karpenter.sh/capacity-type=on-demand,karpenter.sh/nodepool=default,team=a",
				"--register-with-taints": "dedicated=gpu:NoSchedule,karpenter.sh/unregistered:NoExecute",
				"--max-pods":             "29",
			}
			if !reflect.DeepEqual(flags, wantFlags) {
				t.Errorf("kubelet flags = %v, want %v", flags, wantFlags)
			}
		})
	}
}

func TestAL2IPv6AndQuoting(t *testing.T) {
	o := Options{ClusterName: "it's", ClusterEndpoint: "https://x", ClusterCIDR: "fd00:10::/108", ClusterDNS: []string{"fd00:10::a"}}
	out, err := AL2(o)
	if err != nil {
		t.Fatal(err)
	}
	parts := parseMIMEOutput(t, out)
	args := bootstrapArgs(t, parts[0].body)
	want := map[string]string{
		"":                     "it's",
		"--apiserver-endpoint": "https://x",
		"--dns-cluster-ip":     "fd00:10::a",
		"--ip-family":          "ipv6",
		"--service-ipv6-cidr":  "fd00:10::/108",
	}
	if !reflect.DeepEqual(args, want) {
		t.Errorf("bootstrap.sh args = %v, want %v", args, want)
	}
}

func TestBottlerocketMergesUserSettings(t *testing.T) {
	o := baseOptions()
	o.InstanceStorePolicy = ptr.To(awsv1.InstanceStorePolicyRAID0)
	o.UserData = ptr.To(`
[settings.kubernetes]
cluster-name = "user-cluster"
api-server = "https://user.example"
max-pods = 50
image-gc-high-threshold-percent = "90"

[settings.kubernetes.node-labels]
"team" = "user-team"
"user-label" = "kept"

[settings.kubernetes.node-taints]
"dedicated" = ["user:NoExecute"]
"user-taint" = ["x:PreferNoSchedule"]

[settings.host-containers.admin]
enabled = true

[settings.bootstrap-commands.001-user]
commands = [["echo", "hi"]]
mode = "once"
essential = false
`)
	out, err := Bottlerocket(o)
	if err != nil {
		t.Fatal(err)
	}
	doc := decodeTOML(t, out)
	kube := dig(t, doc, "settings", "kubernetes").(map[string]any)
	for key, want := range map[string]any{
		"cluster-name":                    "test-cluster",    // Karpenter's
		"api-server":                      o.ClusterEndpoint, // Karpenter's
		"cluster-certificate":             testCAB64,         // Karpenter's
		"max-pods":                        int64(50),         // user's beats the computed default
		"image-gc-high-threshold-percent": "90",              // user's, untouched
	} {
		if got := kube[key]; !reflect.DeepEqual(got, want) {
			t.Errorf("settings.kubernetes.%s = %#v, want %#v", key, got, want)
		}
	}
	if _, ok := kube["cluster-dns-ip"]; ok {
		t.Errorf("cluster-dns-ip set without any DNS configured")
	}
	if got := dig(t, doc, "settings", "host-containers", "admin", "enabled"); got != true {
		t.Errorf("settings.host-containers.admin.enabled = %v, want true", got)
	}
	wantLabels := map[string]any{
		"karpenter.sh/capacity-type": "on-demand",
		"karpenter.sh/nodepool":      "default",
		"team":                       "a", // Karpenter's label wins
		"user-label":                 "kept",
	}
	if got := kube["node-labels"]; !reflect.DeepEqual(got, wantLabels) {
		t.Errorf("node-labels = %v, want %v", got, wantLabels)
	}
	wantTaints := map[string]any{
		"dedicated":                 []any{"gpu:NoSchedule"}, // Karpenter's taint key wins
		"karpenter.sh/unregistered": []any{":NoExecute"},
		"user-taint":                []any{"x:PreferNoSchedule"},
	}
	if got := kube["node-taints"]; !reflect.DeepEqual(got, wantTaints) {
		t.Errorf("node-taints = %v, want %v", got, wantTaints)
	}
	cmds := dig(t, doc, "settings", "bootstrap-commands").(map[string]any)
	if _, ok := cmds["001-user"]; !ok {
		t.Errorf("user's bootstrap command dropped")
	}
	raid := dig(t, doc, "settings", "bootstrap-commands", "000-mount-instance-storage").(map[string]any)
	wantRAID := map[string]any{
		"commands": []any{
			[]any{"apiclient", "ephemeral-storage", "init"},
			[]any{"apiclient", "ephemeral-storage", "bind", "--dirs", "/var/lib/containerd", "/var/lib/kubelet", "/var/log/pods"},
		},
		"mode":      "always",
		"essential": true,
	}
	if !reflect.DeepEqual(raid, wantRAID) {
		t.Errorf("RAID0 bootstrap command = %v, want %v", raid, wantRAID)
	}
}

func TestBottlerocketWithoutUserData(t *testing.T) {
	o := baseOptions()
	o.ClusterDNS = []string{"10.100.0.10", "10.100.0.11"}
	out, err := Bottlerocket(o)
	if err != nil {
		t.Fatal(err)
	}
	kube := dig(t, decodeTOML(t, out), "settings", "kubernetes").(map[string]any)
	if kube["max-pods"] != int64(29) {
		t.Errorf("max-pods = %v, want the computed 29", kube["max-pods"])
	}
	if got := kube["cluster-dns-ip"]; !reflect.DeepEqual(got, []any{"10.100.0.10", "10.100.0.11"}) {
		t.Errorf("cluster-dns-ip = %v", got)
	}
}

// TestKubeletSettingsReachEveryFamily checks the EC2NodeClass kubelet configuration is
// rendered by every family that bootstraps the node.
func TestKubeletSettingsReachEveryFamily(t *testing.T) {
	o := baseOptions()
	o.Kubelet = nodeClassKubelet()

	t.Run("AL2023", func(t *testing.T) {
		out, err := AL2023(o)
		if err != nil {
			t.Fatal(err)
		}
		parts := parseMIMEOutput(t, out)
		cfg := decodeNodeConfig(t, parts[len(parts)-1].body).Spec.Kubelet.Config
		want := map[string]any{
			"maxPods":                     float64(58),
			"podsPerCore":                 float64(10),
			"clusterDNS":                  []any{"10.100.0.10"},
			"systemReserved":              map[string]any{"cpu": "100m", "memory": "100Mi"},
			"kubeReserved":                map[string]any{"cpu": "200m", "memory": "300Mi", "ephemeral-storage": "1Gi"},
			"evictionHard":                map[string]any{"memory.available": "5%", "nodefs.available": "10%"},
			"evictionSoft":                map[string]any{"memory.available": "10%"},
			"evictionSoftGracePeriod":     map[string]any{"memory.available": "1m30s"},
			"evictionMaxPodGracePeriod":   float64(60),
			"imageGCHighThresholdPercent": float64(85),
			"imageGCLowThresholdPercent":  float64(80),
			"cpuCFSQuota":                 false,
			"registerWithTaints":          cfg["registerWithTaints"],
		}
		if !reflect.DeepEqual(cfg, want) {
			t.Errorf("kubelet config =\n%v\nwant\n%v", cfg, want)
		}
	})

	t.Run("AL2", func(t *testing.T) {
		out, err := AL2(o)
		if err != nil {
			t.Fatal(err)
		}
		parts := parseMIMEOutput(t, out)
		args := bootstrapArgs(t, parts[len(parts)-1].body)
		if args["--dns-cluster-ip"] != "10.100.0.10" || args["--use-max-pods"] != "false" {
			t.Errorf("bootstrap.sh args = %v", args)
		}
		flags := kubeletFlags(t, args["--kubelet-extra-args"])
		want := map[string]string{
			"--node-labels":                   "karpenter.sh/capacity-type=on-demand,karpenter.sh/nodepool=default,team=a",
			"--register-with-taints":          "dedicated=gpu:NoSchedule,karpenter.sh/unregistered:NoExecute",
			"--max-pods":                      "58",
			"--pods-per-core":                 "10",
			"--system-reserved":               "cpu=100m,memory=100Mi",
			"--kube-reserved":                 "cpu=200m,ephemeral-storage=1Gi,memory=300Mi",
			"--eviction-hard":                 "memory.available<5%,nodefs.available<10%",
			"--eviction-soft":                 "memory.available<10%",
			"--eviction-soft-grace-period":    "memory.available=1m30s",
			"--eviction-max-pod-grace-period": "60",
			"--image-gc-high-threshold":       "85",
			"--image-gc-low-threshold":        "80",
			"--cpu-cfs-quota":                 "false",
		}
		if !reflect.DeepEqual(flags, want) {
			t.Errorf("kubelet flags =\n%v\nwant\n%v", flags, want)
		}
	})

	t.Run("Bottlerocket", func(t *testing.T) {
		o := o
		// The EC2NodeClass's settings replace the user's.
		o.UserData = ptr.To("[settings.kubernetes]\nmax-pods = 50\ncluster-dns-ip = \"1.1.1.1\"\n[settings.kubernetes.system-reserved]\ncpu = \"1\"\n")
		out, err := Bottlerocket(o)
		if err != nil {
			t.Fatal(err)
		}
		kube := dig(t, decodeTOML(t, out), "settings", "kubernetes").(map[string]any)
		for key, want := range map[string]any{
			"max-pods":                        int64(58),
			"pods-per-core":                   int64(10),
			"cluster-dns-ip":                  "10.100.0.10",
			"system-reserved":                 map[string]any{"cpu": "100m", "memory": "100Mi"},
			"kube-reserved":                   map[string]any{"cpu": "200m", "memory": "300Mi", "ephemeral-storage": "1Gi"},
			"eviction-hard":                   map[string]any{"memory.available": "5%", "nodefs.available": "10%"},
			"eviction-soft":                   map[string]any{"memory.available": "10%"},
			"eviction-soft-grace-period":      map[string]any{"memory.available": "1m30s"},
			"eviction-max-pod-grace-period":   int64(60),
			"image-gc-high-threshold-percent": "85",
			"image-gc-low-threshold-percent":  "80",
			"cpu-cfs-quota-enforced":          false,
		} {
			if got := kube[key]; !reflect.DeepEqual(got, want) {
				t.Errorf("settings.kubernetes.%s = %#v, want %#v", key, got, want)
			}
		}
	})
}

func TestInvalidUserData(t *testing.T) {
	for _, tt := range []struct {
		name, family, userData string
		want                   []string
	}{
		{"bad TOML", awsv1.AMIFamilyBottlerocket, "[settings.kubernetes\nmax-pods = 1", []string{"spec.userData", "TOML"}},
		{"settings not a table", awsv1.AMIFamilyBottlerocket, "settings = 5", []string{"spec.userData", "settings must be a TOML table"}},
		{"node-labels not a table", awsv1.AMIFamilyBottlerocket, "[settings.kubernetes]\nnode-labels = \"a=b\"", []string{"spec.userData", "settings.kubernetes.node-labels must be a TOML table"}},
		{"NodeConfig not YAML", awsv1.AMIFamilyAL2023, "apiVersion: node.eks.aws/v1alpha1\nkind: NodeConfig\nspec: [\n", []string{"spec.userData", "NodeConfig is not valid YAML"}},
		{"YAML not a NodeConfig", awsv1.AMIFamilyAL2023, "apiVersion: v1\nkind: ConfigMap\n", []string{"spec.userData", "not a NodeConfig", "ConfigMap"}},
		{"neither script nor NodeConfig", awsv1.AMIFamilyAL2023, "echo hello world", []string{"spec.userData", "shell script", "NodeConfig"}},
		{"MIME without boundary", awsv1.AMIFamilyAL2023, "MIME-Version: 1.0\nContent-Type: multipart/mixed\n\nbody", []string{"spec.userData", "boundary"}},
		{"MIME without parts", awsv1.AMIFamilyAL2023, "MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=\"B\"\n\nno parts here\n", []string{"spec.userData", "MIME"}},
		{"MIME truncated", awsv1.AMIFamilyAL2, "MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=\"B\"\n\n--B\nContent-Type: text/x-shellscript\n\n#!/bin/sh\n", []string{"spec.userData", "MIME part 1"}},
		{"MIME bad headers", awsv1.AMIFamilyAL2023, "MIME-Version: 1.0\nnot a header line\n\n", []string{"spec.userData", "MIME"}},
		{"MIME bad Content-Type", awsv1.AMIFamilyAL2023, "MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=\n\n", []string{"spec.userData", "Content-Type"}},
		{"MIME NodeConfig part not YAML", awsv1.AMIFamilyAL2023, "MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=\"B\"\n\n--B\nContent-Type: application/node.eks.aws\n\nkind: [\n--B--\n", []string{"spec.userData", "MIME part 1", "NodeConfig is not valid YAML"}},
		{"NodeConfig for AL2", awsv1.AMIFamilyAL2, "apiVersion: node.eks.aws/v1alpha1\nkind: NodeConfig\n", []string{"spec.userData", "AL2023"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			o := baseOptions()
			o.UserData = ptr.To(tt.userData)
			_, err := Render(tt.family, o)
			if err == nil {
				t.Fatalf("Render(%s) accepted %q", tt.family, tt.userData)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

func TestDeterministic(t *testing.T) {
	o := baseOptions()
	o.Kubelet = nodeClassKubelet()
	o.InstanceStorePolicy = ptr.To(awsv1.InstanceStorePolicyRAID0)
	for i := 0; i < 20; i++ {
		o.Labels["label-"+string(rune('a'+i))] = "v"
	}
	inputs := map[string]*string{
		awsv1.AMIFamilyAL2023:       ptr.To("apiVersion: node.eks.aws/v1alpha1\nkind: NodeConfig\nspec:\n  kubelet:\n    config:\n      b: 1\n      a: 2\n"),
		awsv1.AMIFamilyAL2:          ptr.To("#!/bin/bash\ntrue\n"),
		awsv1.AMIFamilyBottlerocket: ptr.To("[settings.kubernetes.node-labels]\nz = \"1\"\ny = \"2\"\nx = \"3\"\n[settings.a]\nb = 1\nc = 2\n"),
		awsv1.AMIFamilyCustom:       ptr.To(kopsNodeup),
	}
	for family, ud := range inputs {
		o := o
		o.UserData = ud
		first, err := Render(family, o)
		if err != nil {
			t.Fatalf("%s: %v", family, err)
		}
		for i := 0; i < 50; i++ {
			again, err := Render(family, o)
			if err != nil {
				t.Fatalf("%s: %v", family, err)
			}
			if again != first {
				t.Fatalf("%s: render %d differs:\n%s\n---\n%s", family, i, first, again)
			}
		}
	}
}

// TestWindows: the Windows families' user data is one <powershell> block, as the AWS provider
// v1.15.2's bootstrap.Windows.Script (pkg/providers/amifamily/bootstrap/windows.go) writes it
// and its launchtemplate testdata windows_userdata_unmerged.golden and
// windows_userdata_merged.golden show: the user's script first, as written, then
// Start-EKSBootstrap.ps1 with the cluster, the CA, the kubelet flags of
// bootstrap.Options.kubeletExtraArgs (labels and taints in Go quotes, --max-pods, then the
// kubelet configuration) and -DNSClusterIP.
func TestWindows(t *testing.T) {
	const bootstrap = "[string]$EKSBootstrapScriptFile = \"$env:ProgramFiles\\Amazon\\EKS\\Start-EKSBootstrap.ps1\"\n"
	ca := base64String([]byte(testCA))
	call := "& $EKSBootstrapScriptFile -EKSClusterName 'test-cluster' -APIServerEndpoint 'https://ABCDEF.gr7.us-west-2.eks.amazonaws.com' -Base64ClusterCA '" + ca + "'"
	labels := `--node-labels="karpenter.sh/capacity-type=on-demand,karpenter.sh/nodepool=default,team=a" --register-with-taints="dedicated=gpu:NoSchedule,karpenter.sh/unregistered:NoExecute"`
	userScript := "Write-Host \"Running custom user data script\"\nWrite-Host \"Finished running custom user data script\"\n"
	for _, tc := range []struct {
		name   string
		mutate func(*Options)
		want   string
	}{
		{"no user data", func(o *Options) { o.ClusterDNS = []string{"10.100.0.10"} },
			"<powershell>\n" + bootstrap + call + " -KubeletExtraArgs '" + labels + " --max-pods=29' -DNSClusterIP '10.100.0.10'\n</powershell>"},
		{"user script first", func(o *Options) { o.ClusterDNS = []string{"10.100.0.10"}; o.UserData = ptr.To(userScript) },
			"<powershell>\n" + userScript + "\n" + bootstrap + call + " -KubeletExtraArgs '" + labels + " --max-pods=29' -DNSClusterIP '10.100.0.10'\n</powershell>"},
		{"kubelet configuration", func(o *Options) { o.Kubelet = nodeClassKubelet() },
			"<powershell>\n" + bootstrap + call + " -KubeletExtraArgs '" + labels + " --max-pods=58 --pods-per-core=10" +
				` --system-reserved="cpu=100m,memory=100Mi" --kube-reserved="cpu=200m,ephemeral-storage=1Gi,memory=300Mi"` +
				` --eviction-hard="memory.available<5%,nodefs.available<10%" --eviction-soft="memory.available<10%" --eviction-soft-grace-period="memory.available=1m30s"` +
				" --eviction-max-pod-grace-period=60 --image-gc-high-threshold=85 --image-gc-low-threshold=80 --cpu-cfs-quota=false' -DNSClusterIP '10.100.0.10'\n</powershell>"},
		{"no CA, labels or taints", func(o *Options) { o.CABundle, o.Labels, o.Taints, o.MaxPods = nil, nil, nil, nil },
			"<powershell>\n" + bootstrap + "& $EKSBootstrapScriptFile -EKSClusterName 'test-cluster' -APIServerEndpoint 'https://ABCDEF.gr7.us-west-2.eks.amazonaws.com'" +
				` -KubeletExtraArgs '--register-with-taints=""'` + "\n</powershell>"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := baseOptions()
			tc.mutate(&o)
			for _, family := range []string{awsv1.AMIFamilyWindows2019, awsv1.AMIFamilyWindows2022, awsv1.AMIFamilyWindows2025} {
				got, err := Render(family, o)
				if err != nil {
					t.Fatal(err)
				}
				if got != tc.want {
					t.Errorf("Render(%s):\n got %q\nwant %q", family, got, tc.want)
				}
			}
		})
	}
}
