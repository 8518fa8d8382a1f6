package userdata

import (
	"encoding/base64"
	"io"
	"mime"
	"mime/multipart"
	"net/mail"
	"strings"
	"testing"
	"time"

	"github.com/BurntSushi/toml"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	awsv1 "github.com/openkarpenter/karpenter/pkg/apis/aws/v1"
)

const testCA = "-----BEGIN CERTIFICATE-----\nMIIBdummy\n-----END CERTIFICATE-----\n"

var testCAB64 = base64.StdEncoding.EncodeToString([]byte(testCA))

// baseOptions returns options as the cloud provider would fill them for a plain NodePool.
func baseOptions() Options {
	return Options{
		ClusterName:     "test-cluster",
		ClusterEndpoint: "https://ABCDEF.gr7.us-west-2.eks.amazonaws.com",
		CABundle:        []byte(testCA),
		ClusterCIDR:     "10.100.0.0/16",
		Labels: map[string]string{
			"karpenter.sh/nodepool":      "default",
			"karpenter.sh/capacity-type": "on-demand",
			"team":                       "a",
		},
		Taints: []corev1.Taint{
			{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoSchedule},
			{Key: "karpenter.sh/unregistered", Effect: corev1.TaintEffectNoExecute},
		},
		MaxPods: ptr.To[int32](29),
	}
}

// nodeClassKubelet is an EC2NodeClass kubelet configuration setting the commonly used fields.
func nodeClassKubelet() *awsv1.KubeletConfiguration {
	return &awsv1.KubeletConfiguration{
		MaxPods:                     ptr.To[int32](58),
		PodsPerCore:                 ptr.To[int32](10),
		SystemReserved:              map[string]string{"cpu": "100m", "memory": "100Mi"},
		KubeReserved:                map[string]string{"cpu": "200m", "memory": "300Mi", "ephemeral-storage": "1Gi"},
		EvictionHard:                map[string]string{"memory.available": "5%", "nodefs.available": "10%"},
		EvictionSoft:                map[string]string{"memory.available": "10%"},
		EvictionSoftGracePeriod:     map[string]metav1.Duration{"memory.available": {Duration: 90 * time.Second}},
		EvictionMaxPodGracePeriod:   ptr.To[int32](60),
		ImageGCHighThresholdPercent: ptr.To[int32](85),
		ImageGCLowThresholdPercent:  ptr.To[int32](80),
		CPUCFSQuota:                 ptr.To(false),
		ClusterDNS:                  []string{"10.100.0.10"},
	}
}

// mimePart is one part of a parsed MIME document.
type mimePart struct {
	contentType string
	header      map[string][]string
	body        string
}

// parseMIMEOutput parses a rendered MIME multi-part document.
func parseMIMEOutput(t *testing.T, s string) []mimePart {
	t.Helper()
	msg, err := mail.ReadMessage(strings.NewReader(s))
	if err != nil {
		t.Fatalf("output is not a MIME document: %v\n%s", err, s)
	}
	if v := msg.Header.Get("MIME-Version"); v != "1.0" {
		t.Fatalf("MIME-Version = %q", v)
	}
	mt, params, err := mime.ParseMediaType(msg.Header.Get("Content-Type"))
	if err != nil || mt != "multipart/mixed" {
		t.Fatalf("Content-Type = %q (%v)", msg.Header.Get("Content-Type"), err)
	}
	r := multipart.NewReader(msg.Body, params["boundary"])
	var parts []mimePart
	for {
		p, err := r.NextRawPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("MIME part: %v\n%s", err, s)
		}
		b, err := io.ReadAll(p)
		if err != nil {
			t.Fatalf("MIME part body: %v", err)
		}
		parts = append(parts, mimePart{contentType: p.Header.Get("Content-Type"), header: p.Header, body: string(b)})
	}
	return parts
}

// nodeConfig is the part of nodeadm's NodeConfig the tests look at.
type nodeConfig struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Spec       struct {
		Cluster struct {
			Name                 string `json:"name"`
			APIServerEndpoint    string `json:"apiServerEndpoint"`
			CertificateAuthority string `json:"certificateAuthority"`
			CIDR                 string `json:"cidr"`
		} `json:"cluster"`
		Kubelet struct {
			Config map[string]any `json:"config"`
			Flags  []string       `json:"flags"`
		} `json:"kubelet"`
		Instance struct {
			LocalStorage struct {
				Strategy string `json:"strategy"`
			} `json:"localStorage"`
		} `json:"instance"`
	} `json:"spec"`
}

// decodeNodeConfig unmarshals a NodeConfig part.
func decodeNodeConfig(t *testing.T, s string) nodeConfig {
	t.Helper()
	var nc nodeConfig
	if err := yaml.UnmarshalStrict([]byte(s), &nc); err != nil {
		t.Fatalf("NodeConfig does not unmarshal: %v\n%s", err, s)
	}
	return nc
}

// decodeTOML decodes Bottlerocket output.
func decodeTOML(t *testing.T, s string) map[string]any {
	t.Helper()
	out := map[string]any{}
	if _, err := toml.Decode(s, &out); err != nil {
		t.Fatalf("output is not TOML: %v\n%s", err, s)
	}
	return out
}

// dig walks nested TOML tables.
func dig(t *testing.T, m map[string]any, path ...string) any {
	t.Helper()
	var cur any = m
	for i, k := range path {
		tbl, ok := cur.(map[string]any)
		if !ok {
			t.Fatalf("%s is %T, not a table", strings.Join(path[:i], "."), cur)
		}
		cur, ok = tbl[k]
		if !ok {
			t.Fatalf("%s is missing", strings.Join(path[:i+1], "."))
		}
	}
	return cur
}

// shellWords splits a line of shell into words, honouring single quotes and the '\” idiom.
func shellWords(t *testing.T, s string) []string {
	t.Helper()
	var words []string
	var cur strings.Builder
	inWord, inQuote := false, false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case inQuote && c == '\'':
			inQuote = false
		case inQuote:
			cur.WriteByte(c)
		case c == '\'':
			inQuote, inWord = true, true
		case c == '\\' && i+1 < len(s):
			i++
			if s[i] != '\n' {
				cur.WriteByte(s[i])
				inWord = true
			}
		case c == ' ' || c == '\t' || c == '\n':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	if inQuote {
		t.Fatalf("unterminated quote in %q", s)
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words
}

// bootstrapArgs finds the bootstrap.sh command in an AL2 script and returns its options:
// flag → value, plus the cluster name under "".
func bootstrapArgs(t *testing.T, script string) map[string]string {
	t.Helper()
	i := strings.Index(script, "/etc/eks/bootstrap.sh")
	if i < 0 {
		t.Fatalf("no bootstrap.sh call in\n%s", script)
	}
	words := shellWords(t, script[i:])
	args := map[string]string{"": words[1]}
	for j := 2; j < len(words); j += 2 {
		if !strings.HasPrefix(words[j], "--") || j+1 >= len(words) {
			t.Fatalf("unexpected bootstrap.sh word %q in %q", words[j], words)
		}
		args[words[j]] = words[j+1]
	}
	return args
}

// kubeletFlags parses --kubelet-extra-args into flag → value.
func kubeletFlags(t *testing.T, extra string) map[string]string {
	t.Helper()
	flags := map[string]string{}
	for _, f := range strings.Fields(extra) {
		k, v, ok := strings.Cut(f, "=")
		if !ok {
			t.Fatalf("kubelet flag %q has no value", f)
		}
		if _, dup := flags[k]; dup {
			t.Fatalf("kubelet flag %s given twice in %q", k, extra)
		}
		flags[k] = v
	}
	return flags
}
