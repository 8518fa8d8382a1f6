package userdata

import (
	"fmt"
	"net"
	"strings"
)

// AL2 renders a MIME multi-part document for cloud-init on the EKS-optimized Amazon Linux 2
// AMI: the parts of spec.userData first (a MIME document contributes its parts unchanged, a
// "#cloud-config" document becomes a text/cloud-config part, anything else a
// text/x-shellscript part), then Karpenter's shell script, which runs /etc/eks/bootstrap.sh
// with the cluster, DNS, max pods, local-disk and kubelet settings (node labels, taints and
// the EC2NodeClass kubelet configuration as --kubelet-extra-args).
func AL2(o Options) (string, error) {
	parts, err := al2UserParts(o.userData())
	if err != nil {
		return "", err
	}
	return writeMIME(append(parts, newPart(contentTypeShellScript, []byte(al2BootstrapScript(o)))))
}

// al2UserParts turns spec.userData into MIME parts.
func al2UserParts(s string) ([]part, error) {
	trimmed := strings.TrimSpace(s)
	switch {
	case trimmed == "":
		return nil, nil
	case looksLikeMIME(s):
		return parseMIME(s)
	case strings.HasPrefix(trimmed, "#cloud-config"):
		return []part{newPart(contentTypeCloudConfig, []byte(s))}, nil
	case !strings.HasPrefix(trimmed, "#!"):
		if _, err := parseNodeConfig([]byte(s)); err == nil {
			return nil, userDataErr("is a nodeadm NodeConfig, which only the AL2023 AMI family reads; " +
				"for AL2 use a shell script or a MIME multi-part document")
		}
	}
	return []part{newPart(contentTypeShellScript, []byte(s))}, nil
}

// al2BootstrapScript renders the script that runs bootstrap.sh.
func al2BootstrapScript(o Options) string {
	var b strings.Builder
	b.WriteString("#!/bin/bash -xe\n")
	b.WriteString("exec > >(tee /var/log/user-data.log|logger -t user-data -s 2>/dev/console) 2>&1\n")
	// bootstrap.sh takes its options as separate words, not --opt=value.
	fmt.Fprintf(&b, "/etc/eks/bootstrap.sh %s --apiserver-endpoint %s", shellQuote(o.ClusterName), shellQuote(o.ClusterEndpoint))
	if len(o.CABundle) > 0 {
		fmt.Fprintf(&b, " --b64-cluster-ca %s", shellQuote(base64String(o.CABundle)))
	}
	if dns, _ := o.clusterDNS(); len(dns) > 0 {
		fmt.Fprintf(&b, " \\\n--dns-cluster-ip %s", shellQuote(dns[0]))
	}
	if ip := net.ParseIP(strings.SplitN(o.ClusterCIDR, "/", 2)[0]); ip != nil && ip.To4() == nil {
		fmt.Fprintf(&b, " \\\n--ip-family ipv6 --service-ipv6-cidr %s", shellQuote(o.ClusterCIDR))
	}
	if mp, _ := o.maxPods(); mp != nil {
		b.WriteString(" \\\n--use-max-pods false")
	}
	if o.raid0() {
		b.WriteString(" \\\n--local-disks raid0")
	}
	if args := al2KubeletArgs(o); len(args) > 0 {
		fmt.Fprintf(&b, " \\\n--kubelet-extra-args %s", shellQuote(strings.Join(args, " ")))
	}
	b.WriteString("\n")
	return b.String()
}

// al2KubeletArgs renders the kubelet flags bootstrap.sh passes through.
func al2KubeletArgs(o Options) []string {
	var args []string
	if len(o.Labels) > 0 {
		args = append(args, "--node-labels="+nodeLabels(o.Labels))
	}
	if len(o.Taints) > 0 {
		taints := make([]string, 0, len(o.Taints))
		for _, t := range o.Taints {
			taints = append(taints, taintString(t))
		}
		args = append(args, "--register-with-taints="+strings.Join(taints, ","))
	}
	return append(args, kubeletSettingFlags(o, func(v string) string { return v })...)
}

// kubeletSettingFlags are the kubelet flags the AL2 and Windows bootstraps pass after the
// labels and taints: --max-pods, --pods-per-core, the reservations and eviction thresholds
// (maps sorted by key; quote wraps their values as the bootstrap's command line needs), the
// image GC thresholds and --cpu-cfs-quota, each when set.
func kubeletSettingFlags(o Options, quote func(string) string) []string {
	var args []string
	if mp, _ := o.maxPods(); mp != nil {
		args = append(args, fmt.Sprintf("--max-pods=%d", *mp))
	}
	k := o.kubelet()
	if k.PodsPerCore != nil {
		args = append(args, fmt.Sprintf("--pods-per-core=%d", *k.PodsPerCore))
	}
	mapArg := func(flag string, m map[string]string, sep string) {
		if len(m) > 0 {
			args = append(args, flag+"="+quote(joinMap(m, sep)))
		}
	}
	mapArg("--system-reserved", k.SystemReserved, "=")
	mapArg("--kube-reserved", k.KubeReserved, "=")
	mapArg("--eviction-hard", k.EvictionHard, "<")
	mapArg("--eviction-soft", k.EvictionSoft, "<")
	mapArg("--eviction-soft-grace-period", durations(k.EvictionSoftGracePeriod), "=")
	if k.EvictionMaxPodGracePeriod != nil {
		args = append(args, fmt.Sprintf("--eviction-max-pod-grace-period=%d", *k.EvictionMaxPodGracePeriod))
	}
	if k.ImageGCHighThresholdPercent != nil {
		args = append(args, fmt.Sprintf("--image-gc-high-threshold=%d", *k.ImageGCHighThresholdPercent))
	}
	if k.ImageGCLowThresholdPercent != nil {
		args = append(args, fmt.Sprintf("--image-gc-low-threshold=%d", *k.ImageGCLowThresholdPercent))
	}
	if k.CPUCFSQuota != nil {
		args = append(args, fmt.Sprintf("--cpu-cfs-quota=%t", *k.CPUCFSQuota))
	}
	return args
}

// shellQuote quotes s as one bash word in single quotes.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
