package userdata

import (
	"fmt"
	"strconv"
	"strings"
)

// Windows renders the PowerShell user data of the EKS-optimized Windows Server images
// (Windows2019, Windows2022, Windows2025), as the AWS provider v1.15.2's bootstrap.Windows.Script
// (pkg/providers/amifamily/bootstrap/windows.go): one <powershell> block holding spec.userData
// as written, first, then the call of the image's Start-EKSBootstrap.ps1 with the cluster name,
// the API server endpoint, the cluster CA (base64) when known, the kubelet flags as
// -KubeletExtraArgs (windowsKubeletArgs) and the first cluster DNS address as -DNSClusterIP.
//
// Upstream quotes each value in PowerShell single quotes without escaping; here a quote in a
// value is doubled, PowerShell's escape, which changes nothing for the values Kubernetes
// admits (label values, taints, cluster names and URLs hold no quote).
func Windows(o Options) (string, error) {
	var b strings.Builder
	b.WriteString("<powershell>\n")
	if ud := o.userData(); ud != "" {
		b.WriteString(ud + "\n")
	}
	b.WriteString(`[string]$EKSBootstrapScriptFile = "$env:ProgramFiles\Amazon\EKS\Start-EKSBootstrap.ps1"` + "\n")
	fmt.Fprintf(&b, "& $EKSBootstrapScriptFile -EKSClusterName %s -APIServerEndpoint %s", psQuote(o.ClusterName), psQuote(o.ClusterEndpoint))
	if len(o.CABundle) > 0 {
		fmt.Fprintf(&b, " -Base64ClusterCA %s", psQuote(base64String(o.CABundle)))
	}
	if args := windowsKubeletArgs(o); len(args) > 0 {
		fmt.Fprintf(&b, " -KubeletExtraArgs %s", psQuote(strings.Join(args, " ")))
	}
	if dns, _ := o.clusterDNS(); len(dns) > 0 {
		fmt.Fprintf(&b, " -DNSClusterIP %s", psQuote(dns[0]))
	}
	b.WriteString("\n</powershell>")
	return b.String(), nil
}

// windowsKubeletArgs are the kubelet flags of the Windows bootstrap, as the AWS provider
// v1.15.2's bootstrap.Options.kubeletExtraArgs composes them: --node-labels (when there are
// labels) and --register-with-taints (always, empty when there are none), each value in Go's
// double quotes; then --max-pods, --pods-per-core, the reservations and eviction thresholds
// (maps sorted by key here, where upstream follows map order), the image GC thresholds and
// --cpu-cfs-quota, each when set.
func windowsKubeletArgs(o Options) []string {
	var args []string
	if len(o.Labels) > 0 {
		args = append(args, "--node-labels="+strconv.Quote(nodeLabels(o.Labels)))
	}
	taints := make([]string, 0, len(o.Taints))
	for _, t := range o.Taints {
		taints = append(taints, taintString(t))
	}
	args = append(args, "--register-with-taints="+strconv.Quote(strings.Join(taints, ",")))
	return append(args, kubeletSettingFlags(o, strconv.Quote)...)
}

// psQuote quotes s as a PowerShell single-quoted string.
func psQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", "''") + "'"
}
