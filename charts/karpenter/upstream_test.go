package chart_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/openkarpenter/karpenter/pkg/featuregate"
)

// Karpenter's own values files (aws/karpenter-provider-aws charts/karpenter/values.yaml), kept as
// they are: the reference release's (v1.15.2, from its Go module zip) and v1.0.0's, which still
// had the webhook and the post-install hook.
const (
	upstreamHead = "testdata/upstream-values-head.yaml"
	upstreamV1_0 = "testdata/upstream-values-v1.0.0.yaml"
)

// upstreamOnlyInBetween are the leaf keys of Karpenter's values files between v1.0 and the head
// that neither fixture has: v1.5.0's podSecurityContext.runAsNonRoot and v1.8.0's
// settings.featureGates.StaticCapacity (capitalized there).
var upstreamOnlyInBetween = []string{"podSecurityContext.runAsNonRoot", "settings.featureGates.StaticCapacity"}

// baseValues is what every rendering of the upstream key table starts from: the defaults with a
// cluster name (required on AWS).
const baseValues = "settings:\n  clusterName: test\n"

// notesRelease is the release `helm install --dry-run` renders the notes of: a name of its own,
// so that Helm's ownership checks against the test API server meet no object of the other
// tests.
const notesRelease = "notes"

// renderFiles renders the release from the values documents given (later ones win), each
// written to a file; with notes it runs `helm install --dry-run` of notesRelease against the
// test API server, which renders NOTES.txt too (after "NOTES:" in the output).
func renderFiles(t *testing.T, notes bool, values ...string) (string, error) {
	t.Helper()
	dir := t.TempDir()
	args := []string{"template", release, ".", "--namespace", namespace}
	if notes {
		kubeconfig, err := env.KubeconfigFile(dir)
		if err != nil {
			t.Fatal(err)
		}
		args = []string{"install", notesRelease, ".", "--namespace", namespace, "--dry-run=client", "--kubeconfig", kubeconfig}
	}
	for i, v := range values {
		path := filepath.Join(dir, "values"+string(rune('a'+i))+".yaml")
		if err := os.WriteFile(path, []byte(v), 0o644); err != nil {
			t.Fatal(err)
		}
		args = append(args, "-f", path)
	}
	return helm(t, args...)
}

// notesOf is the NOTES.txt part of `helm install --dry-run`'s output.
func notesOf(out string) string {
	if _, notes, ok := strings.Cut(out, "\nNOTES:\n"); ok {
		return notes
	}
	return ""
}

// leafKeys lists the dotted paths of a values document's leaves (an empty mapping, a list, a
// scalar or null is a leaf).
func leafKeys(prefix string, v any, out *[]string) {
	m, ok := v.(map[string]any)
	if !ok || len(m) == 0 {
		*out = append(*out, prefix)
		return
	}
	for k, child := range m {
		p := k
		if prefix != "" {
			p = prefix + "." + k
		}
		leafKeys(p, child, out)
	}
}

func readLeafKeys(t *testing.T, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var values map[string]any
	if err := sigsyaml.Unmarshal(data, &values); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	var keys []string
	leafKeys("", values, &keys)
	sort.Strings(keys)
	return keys
}

// TestUpstreamValuesFiles renders Karpenter's own values files, as they are, with a cluster name
// (Karpenter's chart requires one too): the schema accepts every key, and the release renders.
// Without the cluster name it fails with a message saying what to set. The reference release's
// file, with this project's image set as a user would set it, renders the settings as
// Karpenter v1.15.2's chart renders them.
func TestUpstreamValuesFiles(t *testing.T) {
	t.Run("v1.15.2 with an image", func(t *testing.T) {
		data, err := os.ReadFile(upstreamHead)
		if err != nil {
			t.Fatal(err)
		}
		const image = "controller:\n  image:\n    repository: 123456789012.dkr.ecr.us-west-2.amazonaws.com/karpenter\n    tag: v0.1.0\n    digest: \"\"\n"
		out, err := renderFiles(t, false, string(data), baseValues, image)
		if err != nil {
			t.Fatal(err)
		}
		var d appsv1.Deployment
		find(t, decode(t, out), "Deployment", &d)
		c := d.Spec.Template.Spec.Containers[0]
		if c.Image != "123456789012.dkr.ecr.us-west-2.amazonaws.com/karpenter:v0.1.0" {
			t.Errorf("image %q, want the one set", c.Image)
		}
		env := envOf(c)
		for k, v := range map[string]string{
			"CLUSTER_NAME": "test", "IGNORE_DRA_REQUESTS": "true", "KARPENTER_SERVICE": "karpenter",
			"CPU_REQUESTS": "resourceFieldRef:requests.cpu", "MEMORY_LIMIT": "resourceFieldRef:limits.memory",
			"AMI_REFRESH_INTERVAL": "1m", "SUBNET_REFRESH_INTERVAL": "1m", "SECURITY_GROUP_REFRESH_INTERVAL": "1m",
			"FEATURE_GATES":     "CapacityBuffer=false,NodeOverlay=false,NodeRepair=false,PodDeletionCostManagement=false,RepackConsolidation=false,ReservedCapacity=true,SpotToSpotConsolidation=false,StaticCapacity=false,TerminateFirstDrift=false,TerminateFirstRepair=false",
			"AWS_FEATURE_GATES": "DRAEFA=false,DRANVIDIAGPU=false,NodeClassCEL=false,RebootForRepair=false",
		} {
			if env[k] != v {
				t.Errorf("env %s=%q, want %q", k, env[k], v)
			}
		}
		for _, k := range []string{"LEGACY_NODE_REPAIR", "EKS_CONTROL_PLANE", "ENABLE_ZONAL_SHIFT", "DISABLE_DRY_RUN"} {
			if v, ok := env[k]; ok {
				t.Errorf("env %s=%q rendered, want it left out when false, as Karpenter's chart does", k, v)
			}
		}
		if _, err := featuregate.Karpenter.Parse(env["FEATURE_GATES"]); err != nil {
			t.Errorf("the controller refuses FEATURE_GATES: %v", err)
		}
		if _, err := featuregate.AWS.Parse(env["AWS_FEATURE_GATES"]); err != nil {
			t.Errorf("the controller refuses AWS_FEATURE_GATES: %v", err)
		}
	})
	for _, file := range []string{upstreamHead, upstreamV1_0} {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		out, err := renderFiles(t, false, string(data), baseValues)
		if err != nil {
			t.Errorf("%s: %v", file, err)
			continue
		}
		var d appsv1.Deployment
		find(t, decode(t, out), "Deployment", &d)
		env := envOf(d.Spec.Template.Spec.Containers[0])
		if env["CLUSTER_NAME"] != "test" || env["FEATURE_GATES"] == "" {
			t.Errorf("%s: CLUSTER_NAME=%q FEATURE_GATES=%q", file, env["CLUSTER_NAME"], env["FEATURE_GATES"])
		}
		if _, err := renderFiles(t, false, string(data)); err == nil || !strings.Contains(err.Error(), "settings.clusterName is required with cloudProvider=aws") {
			t.Errorf("%s without a cluster name: %v, want the clusterName required error", file, err)
		}
	}
}

// upstreamKeyCase is one key of Karpenter's chart: its values set (YAML, over baseValues) and
// its effect. Every string of want must appear in the rendered object of kind (or, for kind
// "NOTES", in the release notes) and, so the case can fail, must not appear without the
// values; env gives the controller container's environment variables it must set; wantErr is
// the start of the message of a release the chart refuses.
type upstreamKeyCase struct {
	keys    []string // the upstream leaf keys the case covers
	values  string
	kind    string
	want    []string
	env     map[string]string
	absent  string // a kind the setting must stop rendering
	wantErr string
}

func upstreamKeyCases() []upstreamKeyCase {
	return []upstreamKeyCase{
		{keys: []string{"nameOverride"}, values: "nameOverride: other", kind: "Deployment", want: []string{"app.kubernetes.io/name: other"}},
		{keys: []string{"fullnameOverride"}, values: "fullnameOverride: kp", kind: "Deployment", want: []string{"name: kp\n"}},
		{keys: []string{"additionalLabels"}, values: "additionalLabels: {team: platform}", kind: "Deployment", want: []string{"team: platform"}},
		{keys: []string{"additionalAnnotations"}, values: "additionalAnnotations: {owner: ops}", kind: "Deployment", want: []string{"owner: ops"}},
		{keys: []string{"imagePullPolicy"}, values: "imagePullPolicy: Always", kind: "Deployment", want: []string{"imagePullPolicy: Always"}},
		{keys: []string{"imagePullSecrets"}, values: "imagePullSecrets: [{name: regcred}]", kind: "Deployment", want: []string{"imagePullSecrets:\n        - name: regcred"}},
		{keys: []string{"service.annotations"}, values: "service: {annotations: {svc: metrics}}", kind: "Service", want: []string{"svc: metrics"}},
		{keys: []string{"serviceAccount.create"}, values: "serviceAccount: {create: false, name: existing}", kind: "Deployment", want: []string{"serviceAccountName: existing"}, absent: "ServiceAccount"},
		{keys: []string{"serviceAccount.name"}, values: "serviceAccount: {name: sa1}", kind: "ServiceAccount", want: []string{"name: sa1"}},
		{keys: []string{"serviceAccount.annotations"}, values: "serviceAccount: {annotations: {eks.amazonaws.com/role-arn: 'arn:aws:iam::1:role/K'}}", kind: "ServiceAccount", want: []string{"eks.amazonaws.com/role-arn: arn:aws:iam::1:role/K"}},
		{keys: []string{"additionalClusterRoleRules"}, values: "additionalClusterRoleRules: [{apiGroups: [''], resources: [configmaps], verbs: [get]}]", kind: "ClusterRole", want: []string{"- configmaps"}},
		{keys: []string{"serviceMonitor.enabled"}, values: "serviceMonitor: {enabled: true}", kind: "ServiceMonitor", want: []string{"port: http-metrics"}},
		{keys: []string{"serviceMonitor.additionalLabels"}, values: "serviceMonitor: {enabled: true, additionalLabels: {release: prom}}", kind: "ServiceMonitor", want: []string{"release: prom"}},
		{keys: []string{"serviceMonitor.relabelings"}, values: "serviceMonitor: {enabled: true, relabelings: [{targetLabel: node, sourceLabels: [__meta_kubernetes_pod_node_name]}]}", kind: "ServiceMonitor", want: []string{"relabelings:", "targetLabel: node"}},
		{keys: []string{"serviceMonitor.metricRelabelings"}, values: "serviceMonitor: {enabled: true, metricRelabelings: [{action: drop, regex: go_.*}]}", kind: "ServiceMonitor", want: []string{"metricRelabelings:", "regex: go_.*"}},
		{keys: []string{"serviceMonitor.endpointConfig"}, values: "serviceMonitor: {enabled: true, endpointConfig: {interval: 15s}}", kind: "ServiceMonitor", want: []string{"interval: 15s"}},
		{keys: []string{"serviceMonitor.sampleLimit"}, values: "serviceMonitor: {enabled: true, sampleLimit: 5000}", kind: "ServiceMonitor", want: []string{"sampleLimit: 5000"}},
		{keys: []string{"replicas"}, values: "replicas: 3", kind: "Deployment", want: []string{"replicas: 3"}},
		{keys: []string{"revisionHistoryLimit"}, values: "revisionHistoryLimit: 4", kind: "Deployment", want: []string{"revisionHistoryLimit: 4"}},
		{keys: []string{"strategy.rollingUpdate.maxUnavailable"}, values: "strategy: {rollingUpdate: {maxUnavailable: 2}}", kind: "Deployment", want: []string{"maxUnavailable: 2"}},
		{keys: []string{"podLabels"}, values: "podLabels: {tier: control}", kind: "Deployment", want: []string{"tier: control"}},
		{keys: []string{"podAnnotations"}, values: "podAnnotations: {scrape: 'no'}", kind: "Deployment", want: []string{`scrape: "no"`}},
		{keys: []string{"podDisruptionBudget.name"}, values: "podDisruptionBudget: {name: kpdb}", kind: "PodDisruptionBudget", want: []string{"name: kpdb"}},
		{keys: []string{"podDisruptionBudget.maxUnavailable"}, values: "podDisruptionBudget: {maxUnavailable: 2}", kind: "PodDisruptionBudget", want: []string{"maxUnavailable: 2"}},
		{keys: []string{"podSecurityContext.fsGroup"}, values: "podSecurityContext: {fsGroup: 1000}", kind: "Deployment", want: []string{"fsGroup: 1000"}},
		{keys: []string{"podSecurityContext.seccompProfile.type"}, values: "podSecurityContext: {seccompProfile: {type: Unconfined}}", kind: "Deployment", want: []string{"type: Unconfined"}},
		{keys: []string{"podSecurityContext.runAsNonRoot"}, values: "podSecurityContext: {runAsNonRoot: false}", kind: "Deployment", want: []string{"runAsNonRoot: false"}},
		{keys: []string{"priorityClassName"}, values: "priorityClassName: high", kind: "Deployment", want: []string{"priorityClassName: high"}},
		{keys: []string{"terminationGracePeriodSeconds"}, values: "terminationGracePeriodSeconds: 120", kind: "Deployment", want: []string{"terminationGracePeriodSeconds: 120"}},
		{keys: []string{"hostNetwork"}, values: "hostNetwork: true", kind: "Deployment", want: []string{"hostNetwork: true"}},
		{keys: []string{"schedulerName"}, values: "schedulerName: my-scheduler", kind: "Deployment", want: []string{`schedulerName: "my-scheduler"`}},
		{keys: []string{"dnsPolicy"}, values: "dnsPolicy: Default", kind: "Deployment", want: []string{"dnsPolicy: Default"}},
		{keys: []string{"dnsConfig"}, values: "dnsConfig: {options: [{name: ndots, value: '1'}]}", kind: "Deployment", want: []string{"dnsConfig:", "name: ndots"}},
		{keys: []string{"initContainers"}, values: "initContainers: [{name: wait, image: busybox}]", kind: "Deployment", want: []string{"initContainers:\n        - image: busybox\n          name: wait"}},
		{keys: []string{"nodeSelector.kubernetes.io/os"}, values: "nodeSelector: {disk: ssd}", kind: "Deployment", want: []string{"disk: ssd"}},
		{keys: []string{"affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms"},
			values: "affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: [{matchExpressions: [{key: example.com/pool, operator: Exists}]}]}}}",
			kind:   "Deployment", want: []string{"key: example.com/pool"}},
		{keys: []string{"affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution"},
			values: "affinity: {podAntiAffinity: {requiredDuringSchedulingIgnoredDuringExecution: [{topologyKey: example.com/rack}]}}",
			kind:   "Deployment", want: []string{"topologyKey: example.com/rack"}},
		{keys: []string{"topologySpreadConstraints"}, values: "topologySpreadConstraints: [{maxSkew: 2, topologyKey: example.com/row, whenUnsatisfiable: ScheduleAnyway}]", kind: "Deployment", want: []string{"topologyKey: example.com/row", "maxSkew: 2"}},
		{keys: []string{"tolerations"}, values: "tolerations: [{key: dedicated, operator: Exists}]", kind: "Deployment", want: []string{"key: dedicated"}},
		{keys: []string{"extraVolumes"}, values: "extraVolumes: [{name: token, emptyDir: {}}]", kind: "Deployment", want: []string{"volumes:\n        - emptyDir: {}\n          name: token"}},
		{keys: []string{"controller.containerName"}, values: "controller: {containerName: karpenter-controller}", kind: "Deployment", want: []string{"- name: karpenter-controller", "containerName: karpenter-controller"}},
		{keys: []string{"controller.image.repository", "controller.image.tag"}, values: "controller: {image: {repository: reg.example.com/k, tag: v9}}", kind: "Deployment", want: []string{"image: reg.example.com/k:v9"}},
		{keys: []string{"controller.image.digest"}, values: "controller: {image: {repository: reg.example.com/k, digest: 'sha256:" + strings.Repeat("0a", 32) + "'}}", kind: "Deployment", want: []string{"image: reg.example.com/k@sha256:0a0a"}},
		{keys: []string{"controller.env"}, values: "controller: {env: [{name: AWS_REGION, value: eu-west-1}]}", kind: "Deployment", env: map[string]string{"AWS_REGION": "eu-west-1"}},
		{keys: []string{"controller.envFrom"}, values: "controller: {envFrom: [{configMapRef: {name: extra}}]}", kind: "Deployment", want: []string{"envFrom:\n            - configMapRef:\n                name: extra"}},
		{keys: []string{"controller.securityContext.appArmorProfile"}, values: "controller: {securityContext: {appArmorProfile: {type: Localhost, localhostProfile: karpenter}}}", kind: "Deployment", want: []string{"appArmorProfile:", "localhostProfile: karpenter"}},
		{keys: []string{"controller.securityContext.seLinuxOptions"}, values: "controller: {securityContext: {seLinuxOptions: {level: 's0:c123,c456'}}}", kind: "Deployment", want: []string{"seLinuxOptions:", "level: s0:c123,c456"}},
		{keys: []string{"controller.securityContext.seccompProfile"}, values: "controller: {securityContext: {seccompProfile: {type: Localhost, localhostProfile: profiles/k.json}}}", kind: "Deployment", want: []string{"localhostProfile: profiles/k.json"}},
		{keys: []string{"controller.resources"}, values: "controller: {resources: {limits: {cpu: '3'}}}", kind: "Deployment", want: []string{`cpu: "3"`}},
		{keys: []string{"controller.extraVolumeMounts"}, values: "controller: {extraVolumeMounts: [{name: token, mountPath: /var/run/token}]}", kind: "Deployment", want: []string{"volumeMounts:\n            - mountPath: /var/run/token"}},
		{keys: []string{"controller.sidecarContainer"}, values: "controller: {sidecarContainer: [{name: proxy, image: envoy}]}", kind: "Deployment", want: []string{"- image: envoy\n          name: proxy"}},
		{keys: []string{"controller.sidecarVolumeMounts"}, values: "controller: {sidecarContainer: [{name: proxy, image: envoy}], sidecarVolumeMounts: [{name: certs, mountPath: /certs}]}", kind: "Deployment",
			want: []string{"name: proxy\n          volumeMounts:\n          - mountPath: /certs"}},
		{keys: []string{"controller.metrics.port"}, values: "controller: {metrics: {port: 9090}}", kind: "Deployment", want: []string{"containerPort: 9090"}, env: map[string]string{"METRICS_BIND_ADDRESS": ":9090"}},
		{keys: []string{"controller.healthProbe.port"}, values: "controller: {healthProbe: {port: 9091}}", kind: "Deployment", want: []string{"containerPort: 9091"}, env: map[string]string{"HEALTH_PROBE_BIND_ADDRESS": ":9091"}},
		{keys: []string{"logLevel"}, values: "logLevel: debug", kind: "Deployment", env: map[string]string{"LOG_LEVEL": "debug"}},
		{keys: []string{"logOutputPaths"}, values: "logOutputPaths: [stdout, /var/log/k.log]", kind: "Deployment", env: map[string]string{"LOG_OUTPUT_PATHS": "stdout,/var/log/k.log"}},
		{keys: []string{"logErrorOutputPaths"}, values: "logErrorOutputPaths: [stderr, /var/log/e.log]", kind: "Deployment", env: map[string]string{"LOG_ERROR_OUTPUT_PATHS": "stderr,/var/log/e.log"}},
		{keys: []string{"settings.batchMaxDuration"}, values: "settings: {batchMaxDuration: 20s}", kind: "Deployment", env: map[string]string{"BATCH_MAX_DURATION": "20s"}},
		{keys: []string{"settings.batchIdleDuration"}, values: "settings: {batchIdleDuration: 2s}", kind: "Deployment", env: map[string]string{"BATCH_IDLE_DURATION": "2s"}},
		{keys: []string{"settings.preferencePolicy"}, values: "settings: {preferencePolicy: Ignore}", kind: "Deployment", env: map[string]string{"PREFERENCE_POLICY": "Ignore"}},
		{keys: []string{"settings.minValuesPolicy"}, values: "settings: {minValuesPolicy: BestEffort}", kind: "Deployment", env: map[string]string{"MIN_VALUES_POLICY": "BestEffort"}},
		{keys: []string{"settings.clusterCABundle"}, values: "settings: {clusterCABundle: Q0E=}", kind: "Deployment", env: map[string]string{"CLUSTER_CA_BUNDLE": "Q0E="}},
		{keys: []string{"settings.clusterName"}, values: "settings: {clusterName: prod}", kind: "Deployment", env: map[string]string{"CLUSTER_NAME": "prod"}},
		// The string settings may be templates, as in Karpenter's chart.
		{keys: []string{"settings.clusterName"}, values: "settings: {clusterName: '{{ .Release.Name }}-prod', interruptionQueue: '{{ .Release.Namespace }}-q'}", kind: "Deployment",
			env: map[string]string{"CLUSTER_NAME": "karpenter-prod", "INTERRUPTION_QUEUE": "karpenter-q"}},
		{keys: []string{"settings.clusterEndpoint"}, values: "settings: {clusterEndpoint: 'https://api.example.com'}", kind: "Deployment", env: map[string]string{"CLUSTER_ENDPOINT": "https://api.example.com"}},
		{keys: []string{"settings.isolatedVPC"}, values: "settings: {isolatedVPC: true}", kind: "Deployment", env: map[string]string{"ISOLATED_VPC": "true"}},
		{keys: []string{"settings.vmMemoryOverheadPercent"}, values: "settings: {vmMemoryOverheadPercent: 0.1}", kind: "Deployment", env: map[string]string{"VM_MEMORY_OVERHEAD_PERCENT": "0.1"}},
		{keys: []string{"settings.interruptionQueue"}, values: "settings: {interruptionQueue: Karpenter-prod}", kind: "Deployment", env: map[string]string{"INTERRUPTION_QUEUE": "Karpenter-prod"}},
		{keys: []string{"settings.reservedENIs"}, values: "settings: {reservedENIs: '2'}", kind: "Deployment", env: map[string]string{"RESERVED_ENIS": "2"}},
		{keys: []string{"settings.disableClusterStateObservability"}, values: "settings: {disableClusterStateObservability: true}", kind: "Deployment", env: map[string]string{"DISABLE_CLUSTER_STATE_OBSERVABILITY": "true"}},
		// Karpenter v1.15's settings, rendered as its chart renders them (the controller reads
		// each: docs/helm.md).
		{keys: []string{"settings.eksControlPlane"}, values: "settings: {eksControlPlane: true}", kind: "Deployment", env: map[string]string{"EKS_CONTROL_PLANE": "true"}},
		{keys: []string{"settings.amiRefreshInterval"}, values: "settings: {amiRefreshInterval: 5m}", kind: "Deployment", env: map[string]string{"AMI_REFRESH_INTERVAL": "5m"}},
		{keys: []string{"settings.subnetRefreshInterval"}, values: "settings: {subnetRefreshInterval: 10m}", kind: "Deployment", env: map[string]string{"SUBNET_REFRESH_INTERVAL": "10m"}},
		{keys: []string{"settings.securityGroupRefreshInterval"}, values: "settings: {securityGroupRefreshInterval: 3m}", kind: "Deployment", env: map[string]string{"SECURITY_GROUP_REFRESH_INTERVAL": "3m"}},
		{keys: []string{"settings.legacyNodeRepair"}, values: "settings: {legacyNodeRepair: true}", kind: "Deployment", env: map[string]string{"LEGACY_NODE_REPAIR": "true"}},
		{keys: []string{"settings.legacyNodeRepair"}, values: "settings: {legacyNodeRepair: true, featureGates: {terminateFirstRepair: true}}",
			wantErr: "settings.legacyNodeRepair can't be combined with settings.featureGates.terminateFirstRepair"},
		{keys: []string{"webhook.enabled", "webhook.port", "webhook.metrics.port"}, values: "webhook: {enabled: true, port: 8443, metrics: {port: 8001}}", kind: "NOTES", want: []string{"webhook.* has no effect"}},
		{keys: []string{"postInstallHook.image.repository", "postInstallHook.image.tag", "postInstallHook.image.digest"},
			values: "postInstallHook: {image: {repository: public.ecr.aws/bitnami/kubectl, tag: '1.30', digest: 'sha256:13'}}", kind: "NOTES", want: []string{"postInstallHook.* has no effect"}},
		{keys: []string{"settings.enableZonalShift"}, values: "settings: {enableZonalShift: true}", kind: "Deployment", env: map[string]string{"ENABLE_ZONAL_SHIFT": "true"}},
		{keys: []string{"settings.enableZonalShift"}, values: "cloudProvider: sim\nsettings: {enableZonalShift: true}", wantErr: "settings.enableZonalShift=true: ARC zonal shifts are AWS's, and the simulated cloud has none"},
		// Not honoured here: refused.
		{keys: []string{"settings.ignoreDRARequests"}, values: "settings: {ignoreDRARequests: false}", wantErr: "settings.ignoreDRARequests=false: this controller's scheduling ignores pods' dynamic resource allocation"},
		{keys: []string{"settings.enableDRA"}, values: "settings: {enableDRA: true}", wantErr: "settings.enableDRA=true (it sets ignoreDRARequests to false): this controller's scheduling ignores"},
		{keys: []string{"settings.enableDRA"}, values: "settings: {enableDRA: true, awsFeatureGates: {draEFA: false}}", wantErr: "settings.enableDRA is mutually exclusive with settings.awsFeatureGates.draEFA"},
		{keys: []string{"settings.awsFeatureGates.draNVIDIAGPU"}, values: "settings: {awsFeatureGates: {draNVIDIAGPU: true}}", wantErr: "settings.awsFeatureGates.draNVIDIAGPU or draEFA=true (either sets ignoreDRARequests to false)"},
		{keys: []string{"settings.awsFeatureGates.draEFA"}, values: "settings: {awsFeatureGates: {draEFA: true}}", wantErr: "settings.awsFeatureGates.draNVIDIAGPU or draEFA=true"},
		// Karpenter dry-runs launches to check IAM permissions unless disableDryRun; so does
		// the controller (the EC2NodeClass launch check), which reads it.
		{keys: []string{"settings.disableDryRun"}, values: "settings: {disableDryRun: true}", kind: "Deployment", env: map[string]string{"DISABLE_DRY_RUN": "true"}},
		// The gates reach the controller as FEATURE_GATES; it refuses the ones not built
		// (cmd/karpenter TestControllerRefusesFeatureGates).
		{keys: []string{"settings.featureGates.nodeRepair"}, values: "settings: {featureGates: {nodeRepair: true}}", kind: "Deployment", env: map[string]string{"FEATURE_GATES": "CapacityBuffer=false,NodeOverlay=false,NodeRepair=true,PodDeletionCostManagement=false,RepackConsolidation=false,ReservedCapacity=true,SpotToSpotConsolidation=false,StaticCapacity=false,TerminateFirstDrift=false,TerminateFirstRepair=false"}},
		{keys: []string{"settings.featureGates.nodeOverlay"}, values: "settings: {featureGates: {nodeOverlay: true}}", kind: "Deployment", env: map[string]string{"FEATURE_GATES": "CapacityBuffer=false,NodeOverlay=true,NodeRepair=false,PodDeletionCostManagement=false,RepackConsolidation=false,ReservedCapacity=true,SpotToSpotConsolidation=false,StaticCapacity=false,TerminateFirstDrift=false,TerminateFirstRepair=false"}},
		{keys: []string{"settings.featureGates.reservedCapacity"}, values: "settings: {featureGates: {reservedCapacity: false}}", kind: "Deployment", env: map[string]string{"FEATURE_GATES": "CapacityBuffer=false,NodeOverlay=false,NodeRepair=false,PodDeletionCostManagement=false,RepackConsolidation=false,ReservedCapacity=false,SpotToSpotConsolidation=false,StaticCapacity=false,TerminateFirstDrift=false,TerminateFirstRepair=false"}},
		{keys: []string{"settings.featureGates.spotToSpotConsolidation"}, values: "settings: {featureGates: {spotToSpotConsolidation: true}}", kind: "Deployment", env: map[string]string{"FEATURE_GATES": "CapacityBuffer=false,NodeOverlay=false,NodeRepair=false,PodDeletionCostManagement=false,RepackConsolidation=false,ReservedCapacity=true,SpotToSpotConsolidation=true,StaticCapacity=false,TerminateFirstDrift=false,TerminateFirstRepair=false"}},
		{keys: []string{"settings.featureGates.staticCapacity"}, values: "settings: {featureGates: {staticCapacity: true}}", kind: "Deployment", env: map[string]string{"FEATURE_GATES": "CapacityBuffer=false,NodeOverlay=false,NodeRepair=false,PodDeletionCostManagement=false,RepackConsolidation=false,ReservedCapacity=true,SpotToSpotConsolidation=false,StaticCapacity=true,TerminateFirstDrift=false,TerminateFirstRepair=false"}},
		{keys: []string{"settings.featureGates.StaticCapacity"}, values: "settings: {featureGates: {StaticCapacity: true, staticCapacity: null}}", kind: "Deployment", env: map[string]string{"FEATURE_GATES": "CapacityBuffer=false,NodeOverlay=false,NodeRepair=false,PodDeletionCostManagement=false,RepackConsolidation=false,ReservedCapacity=true,SpotToSpotConsolidation=false,StaticCapacity=true,TerminateFirstDrift=false,TerminateFirstRepair=false"}},
		{keys: []string{"settings.featureGates.capacityBuffer"}, values: "settings: {featureGates: {capacityBuffer: true}}", kind: "Deployment", env: map[string]string{"FEATURE_GATES": "CapacityBuffer=true,NodeOverlay=false,NodeRepair=false,PodDeletionCostManagement=false,RepackConsolidation=false,ReservedCapacity=true,SpotToSpotConsolidation=false,StaticCapacity=false,TerminateFirstDrift=false,TerminateFirstRepair=false"}},
		{keys: []string{"settings.featureGates.repackConsolidation"}, values: "settings: {featureGates: {repackConsolidation: true}}", kind: "Deployment", env: map[string]string{"FEATURE_GATES": "CapacityBuffer=false,NodeOverlay=false,NodeRepair=false,PodDeletionCostManagement=false,RepackConsolidation=true,ReservedCapacity=true,SpotToSpotConsolidation=false,StaticCapacity=false,TerminateFirstDrift=false,TerminateFirstRepair=false"}},
		{keys: []string{"settings.featureGates.terminateFirstDrift"}, values: "settings: {featureGates: {terminateFirstDrift: true}}", kind: "Deployment", want: []string{"TerminateFirstDrift=true"}},
		{keys: []string{"settings.featureGates.terminateFirstRepair"}, values: "settings: {featureGates: {terminateFirstRepair: true}}", kind: "Deployment", want: []string{"TerminateFirstRepair=true"}},
		{keys: []string{"settings.featureGates.podDeletionCostManagement"}, values: "settings: {featureGates: {podDeletionCostManagement: true}}", kind: "Deployment", want: []string{"PodDeletionCostManagement=true"}},
		{keys: []string{"settings.awsFeatureGates.nodeClassCEL"}, values: "settings: {awsFeatureGates: {nodeClassCEL: true}}", kind: "Deployment", env: map[string]string{"AWS_FEATURE_GATES": "DRAEFA=false,DRANVIDIAGPU=false,NodeClassCEL=true,RebootForRepair=false"}},
		{keys: []string{"settings.awsFeatureGates.rebootForRepair"}, values: "settings: {awsFeatureGates: {rebootForRepair: true}}", kind: "Deployment", env: map[string]string{"AWS_FEATURE_GATES": "DRAEFA=false,DRANVIDIAGPU=false,NodeClassCEL=false,RebootForRepair=true"}},
	}
}

// objectText is the rendered YAML of the one object of the kind in out.
func objectText(out, kind string) string {
	for _, doc := range strings.Split(out, "\n---\n") {
		if strings.Contains(doc, "\nkind: "+kind+"\n") {
			return doc
		}
	}
	return ""
}

// TestUpstreamKeys checks each key of Karpenter's chart for the effect it has there: the object
// field or environment variable it sets, a warning in the release notes where it has no effect
// here, or a refusal where it cannot be honoured. Every leaf key of Karpenter's values files
// (v1.0 to the head) has a case.
func TestUpstreamKeys(t *testing.T) {
	cases := upstreamKeyCases()
	covered := map[string]bool{}
	for _, tc := range cases {
		for _, k := range tc.keys {
			covered[k] = true
		}
	}
	keys := append(readLeafKeys(t, upstreamHead), readLeafKeys(t, upstreamV1_0)...)
	keys = append(keys, upstreamOnlyInBetween...)
	for _, k := range keys {
		if !covered[k] {
			t.Errorf("Karpenter's chart key %s has no case in upstreamKeyCases", k)
		}
	}

	baselineNotes, err := renderFiles(t, true, baseValues)
	if err != nil {
		t.Fatal(err)
	}
	baselineManifests, err := renderFiles(t, false, baseValues)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range cases {
		name := strings.Join(tc.keys, ",")
		out, err := renderFiles(t, tc.kind == "NOTES", baseValues, tc.values)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%s: %v, want the error %q", name, err, tc.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		got, base := objectText(out, tc.kind), objectText(baselineManifests, tc.kind)
		if tc.kind == "NOTES" {
			got, base = notesOf(out), notesOf(baselineNotes)
		}
		if got == "" {
			t.Errorf("%s: no %s rendered", name, tc.kind)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s: the %s lacks %q:\n%s", name, tc.kind, w, got)
			}
			if strings.Contains(base, w) {
				t.Errorf("%s: the default %s has %q already: the case cannot fail", name, tc.kind, w)
			}
		}
		if tc.absent != "" && objectText(out, tc.absent) != "" {
			t.Errorf("%s: a %s is still rendered", name, tc.absent)
		}
		if len(tc.env) > 0 {
			var d appsv1.Deployment
			find(t, decode(t, out), "Deployment", &d)
			var baseD appsv1.Deployment
			find(t, decode(t, baselineManifests), "Deployment", &baseD)
			env, baseEnv := envOf(d.Spec.Template.Spec.Containers[0]), envOf(baseD.Spec.Template.Spec.Containers[0])
			for k, v := range tc.env {
				if env[k] != v {
					t.Errorf("%s: env %s=%q, want %q", name, k, env[k], v)
				}
				if baseEnv[k] == v {
					t.Errorf("%s: env %s=%q by default already: the case cannot fail", name, k, v)
				}
			}
		}
		if len(tc.want) == 0 && len(tc.env) == 0 && tc.absent == "" {
			// A key without anything to render here: the release is the default one.
			if out != baselineManifests {
				t.Errorf("%s: changed the rendering, want it without effect", name)
			}
		}
	}
}

// TestFeatureGateValuesMatchTable: the gates settings.featureGates and
// settings.awsFeatureGates accept (values.schema.json) are those of Karpenter's chart, each a
// gate of the controller's table (pkg/featuregate) once capitalized (the DRA gates spelled as
// Karpenter's chart renders them), and values.yaml sets each to Karpenter's default (null, as
// Karpenter's chart leaves the DRA gates, is off).
func TestFeatureGateValuesMatchTable(t *testing.T) {
	data, err := os.ReadFile("values.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	var schema struct {
		Properties struct {
			Settings struct {
				Properties map[string]struct {
					Properties map[string]json.RawMessage `json:"properties"`
				} `json:"properties"`
			} `json:"settings"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(data, &schema); err != nil {
		t.Fatal(err)
	}
	valuesData, err := os.ReadFile("values.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var values struct {
		Settings map[string]map[string]bool `json:"settings"`
	}
	// Only the two gate mappings are read; the other settings are not booleans.
	var raw map[string]any
	if err := sigsyaml.Unmarshal(valuesData, &raw); err != nil {
		t.Fatal(err)
	}
	values.Settings = map[string]map[string]bool{}
	for _, key := range []string{"featureGates", "awsFeatureGates"} {
		m, _ := raw["settings"].(map[string]any)[key].(map[string]any)
		values.Settings[key] = map[string]bool{}
		for k, v := range m {
			values.Settings[key][k], _ = v.(bool)
		}
	}
	for _, tc := range []struct {
		key   string
		table *featuregate.Table
		want  []string
	}{
		// Karpenter's chart's keys, and repackConsolidation, this project's own gate.
		{"featureGates", &featuregate.Karpenter, []string{"capacityBuffer", "nodeOverlay", "nodeRepair", "podDeletionCostManagement", "repackConsolidation", "reservedCapacity", "spotToSpotConsolidation", "staticCapacity", "terminateFirstDrift", "terminateFirstRepair"}},
		{"awsFeatureGates", &featuregate.AWS, []string{"draEFA", "draNVIDIAGPU", "nodeClassCEL", "rebootForRepair"}},
	} {
		var got []string
		for name := range schema.Properties.Settings.Properties[tc.key].Properties {
			if name == "StaticCapacity" { // v1.8.0's spelling of staticCapacity
				continue
			}
			got = append(got, name)
		}
		sort.Strings(got)
		if !slices.Equal(got, tc.want) {
			t.Errorf("settings.%s accepts %v, want Karpenter's chart's %v", tc.key, got, tc.want)
		}
		for _, name := range got {
			gateName := strings.ToUpper(name[:1]) + name[1:]
			if spelled, ok := map[string]string{"draNVIDIAGPU": "DRANVIDIAGPU", "draEFA": "DRAEFA"}[name]; ok {
				gateName = spelled // as Karpenter's chart spells them in AWS_FEATURE_GATES
			}
			gate, ok := tc.table.Lookup(gateName)
			if !ok {
				t.Errorf("settings.%s.%s is not a gate of %s", tc.key, name, tc.table.Setting)
				continue
			}
			if v, ok := values.Settings[tc.key][name]; !ok || v != gate.Default {
				t.Errorf("values.yaml settings.%s.%s=%v (set %t), want Karpenter's default %t", tc.key, name, v, ok, gate.Default)
			}
		}
	}
}

// TestNotesWarnings: the release notes warn of exactly the keys that have no effect here:
// none for the defaults or Karpenter's newest values file, the webhook and the post-install
// hook for v1.0.0's.
func TestNotesWarnings(t *testing.T) {
	read := func(path string) string {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return string(data)
	}
	for _, tc := range []struct {
		name   string
		values []string
		want   []string
	}{
		{"defaults", []string{baseValues}, nil},
		{upstreamHead, []string{read(upstreamHead), baseValues}, []string{"controller.image.repository public.ecr.aws/karpenter/controller is Karpenter's own"}},
		{upstreamV1_0, []string{read(upstreamV1_0), baseValues}, []string{"controller.image.repository public.ecr.aws/karpenter/controller is Karpenter's own", "webhook.* has no effect", "postInstallHook.* has no effect"}},
		{"this project's image", []string{read(upstreamHead), baseValues, "controller: {image: {repository: 123456789012.dkr.ecr.us-west-2.amazonaws.com/karpenter}}\n"}, nil},
	} {
		out, err := renderFiles(t, true, tc.values...)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		notes := notesOf(out)
		if !strings.Contains(notes, "Next steps:") {
			t.Errorf("%s: no release notes in the output:\n%s", tc.name, out)
			continue
		}
		if got := strings.Count(notes, "WARNING:"); got != len(tc.want) {
			t.Errorf("%s: %d warnings, want %d:\n%s", tc.name, got, len(tc.want), notes)
		}
		for _, w := range tc.want {
			if !strings.Contains(notes, w) {
				t.Errorf("%s: the notes lack %q:\n%s", tc.name, w, notes)
			}
		}
	}
}
