package simulate

import (
	"strings"
	"testing"
)

// checkBase is a valid workload; the cases of TestWorkloadRefusals append timeline events to
// it or replace its lines. Its timeline starts at line 21.
const checkBase = `name: checks
duration: 1h
manifests: |
  apiVersion: karpenter.sh/v1
  kind: NodePool
  metadata: {name: default}
  spec:
    template:
      spec:
        nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
        requirements: []
  ---
  apiVersion: karpenter.k8s.aws/v1
  kind: EC2NodeClass
  metadata: {name: default}
  spec:
    role: R
    amiSelectorTerms: [{alias: al2023@latest}]
    subnetSelectorTerms: [{tags: {a: b}}]
    securityGroupSelectorTerms: [{tags: {a: b}}]
timeline:
  - at: 0s
    deploy:
      name: web
      replicas: 3
      pod:
        cpu: 500m
        memory: 1Gi
`

// TestWorkloadRefusals: what the API server would refuse in a workload's pods, and what is
// past the simulator's bounds, is refused with the file, the line of the field as written and
// the field, before anything runs.
func TestWorkloadRefusals(t *testing.T) {
	if _, err := ParseWorkload("w.yaml", []byte(checkBase)); err != nil {
		t.Fatalf("the base workload is refused: %v", err)
	}
	for _, tc := range []struct{ name, text, want string }{
		{"maxSkew 0", checkBase + `        topologySpreadConstraints:
          - maxSkew: 0
            topologyKey: topology.kubernetes.io/zone
            whenUnsatisfiable: DoNotSchedule
`, "w.yaml:30: timeline[0].deploy.pod.topologySpreadConstraints[0].maxSkew: Invalid value: 0: must be greater than zero"},
		{"operator Maybe", checkBase + `        affinity:
          nodeAffinity:
            requiredDuringSchedulingIgnoredDuringExecution:
              nodeSelectorTerms:
                - matchExpressions:
                    - {key: kubernetes.io/arch, operator: Maybe, values: [amd64]}
`, "w.yaml:34: timeline[0].deploy.pod.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].operator: Invalid value: \"Maybe\": not a valid selector operator"},
		{"toleration Exists with a value", checkBase + `        tolerations: [{key: a, operator: Exists, value: b}]
`, "w.yaml:29: timeline[0].deploy.pod.tolerations[0].operator: Invalid value: \"b\": value must be empty when `operator` is 'Exists'"},
		{"label value too long", strings.Replace(checkBase, "        cpu: 500m\n", "        cpu: 500m\n        labels: {app: "+strings.Repeat("x", 64)+"}\n", 1),
			"timeline[0].deploy.pod.labels: Invalid value: \"" + strings.Repeat("x", 64) + "\": must be no more than 63"},
		{"name not a DNS label", strings.Replace(checkBase, "name: web", "name: Web_1", 1), "timeline[0].deploy.name"},
		{"hostPort in a template", strings.Replace(checkBase, `        cpu: 500m
        memory: 1Gi
`, `        template:
          spec:
            containers:
              - name: main
                image: x
                ports: [{containerPort: 80, hostPort: 99999}]
`, 1), "w.yaml:32: timeline[0].deploy.pod.template.spec.containers[0].ports[0].hostPort: Invalid value: 99999: must be between 1 and 65535, inclusive"},
		{"negative cpu", strings.Replace(checkBase, "cpu: 500m", "cpu: -1", 1), `w.yaml:27: timeline[0].deploy.pod: cpu: "-1" is negative`},
		{"fractional replicas", strings.Replace(checkBase, "replicas: 3", "replicas: 4.5", 1), "w.yaml:25: replicas: 4.5 is not a whole number"},
		{"replicas past the bound", strings.Replace(checkBase, "replicas: 3", "replicas: 1000000000000", 1), "w.yaml:25: timeline[0].deploy.replicas: 1000000000000 is more than the simulator's bound of 100000 pods"},
		{"scale past the bound", checkBase + "  - at: 1m\n    scale: {name: web, replicas: 200000}\n", "w.yaml:30: timeline[1].scale.replicas: 200000 is more than the simulator's bound"},
		{"jobs past the bound", checkBase + "  - at: 1m\n    jobs: {name: b, count: 100001, runtime: 1m, pod: {cpu: '1'}}\n", "timeline[1].jobs.count: 100001 is more than the simulator's bound"},
		{"a job's pods as the server checks them", checkBase + "  - at: 1m\n    jobs:\n      name: b\n      count: 2\n      runtime: 1m\n      pod:\n        cpu: '1'\n        nodeSelector: {'bad key!': x}\n",
			"w.yaml:36: timeline[1].jobs.pod.nodeSelector: Invalid value: \"bad key!\""},
		{"duration past the bound", strings.Replace(checkBase, "duration: 1h", "duration: 2000000h", 1), "w.yaml:2: duration: 2000000h0m0s is longer than the simulator's bound of 720h0m0s (30 days)"},
		{"shortage of an unknown type", checkBase + "  - at: 1m\n    capacityShortage: {instanceType: m9z.huge, for: 1h}\n", "timeline[1].capacityShortage.instanceType: \"m9z.huge\" is not an EC2 instance type of the catalog"},
		{"shortage in an unknown zone", checkBase + "  - at: 1m\n    capacityShortage: {zone: mars-1a, for: 1h}\n", "timeline[1].capacityShortage.zone: \"mars-1a\" is not a zone of the simulated cloud (us-east-1a, us-east-1b, us-east-1c)"},
		{"shortage of an unknown capacity type", checkBase + "  - at: 1m\n    capacityShortage: {capacityType: reserved-ish, for: 1h}\n", "timeline[1].capacityShortage.capacityType: \"reserved-ish\" is not spot or on-demand"},
		{"static NodePool past the bound", strings.Replace(strings.Replace(checkBase, "  spec:\n    template:", "  spec:\n    replicas: 20000\n    template:", 1), "timeline:", "featureGates: {StaticCapacity: true}\ntimeline:", 1),
			"NodePool default: spec.replicas: 20000 is more than the simulator's bound of 10000 nodes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseWorkload("w.yaml", []byte(tc.text))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v\nwant an error containing %q", err, tc.want)
			}
		})
	}
}

// TestPlainManifestBounds: plain manifests are held to the same bounds.
func TestPlainManifestBounds(t *testing.T) {
	for _, tc := range []struct{ name, text, want string }{
		{"replicas", strings.Replace(gettingStarted, "  replicas: 5\n", "  replicas: 2000000\n", 1), "spec.replicas: 2000000 is more than the simulator's bound of 100000 pods"},
		{"fractional replicas", strings.Replace(gettingStarted, "  replicas: 5\n", "  replicas: 4.5\n", 1), `m.yaml:52: Deployment "inflate": spec.replicas: want a whole number from -2147483648 to 2147483647, got 4.5`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseWorkload("m.yaml", []byte(tc.text))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v\nwant an error containing %q", err, tc.want)
			}
		})
	}
}
