package convert

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

// The formats convert reads, each the name of its subcommand and subpackage.
const (
	FormatKops   = "kops"
	FormatEksctl = "eksctl"
	FormatLegacy = "legacy"
)

// DetectFormat tells which converter the documents are for from their apiVersion and kind:
// kops.k8s.io objects are kOps', eksctl.io objects eksctl's, and karpenter.sh/v1alpha5 and
// karpenter.k8s.aws/v1alpha1 objects legacy Karpenter's. Other documents do not count. It fails
// when no document, or documents of two formats, are found, with an error that starts with the
// names of the files.
func DetectFormat(sources []Source) (string, error) {
	found := map[string]bool{}
	for _, src := range sources {
		switch {
		case src.Group() == "kops.k8s.io":
			found[FormatKops] = true
		case src.Group() == "eksctl.io":
			found[FormatEksctl] = true
		case src.APIVersion == "karpenter.sh/v1alpha5", src.APIVersion == "karpenter.k8s.aws/v1alpha1":
			found[FormatLegacy] = true
		}
	}
	var files []string
	for _, src := range sources {
		if !slices.Contains(files, src.File) {
			files = append(files, src.File)
		}
	}
	named := strings.Join(files, ", ")
	formats := make([]string, 0, len(found))
	for f := range found {
		formats = append(formats, f)
	}
	sort.Strings(formats)
	switch len(formats) {
	case 1:
		return formats[0], nil
	case 0:
		if current := currentKarpenter(sources); current != "" {
			return "", fmt.Errorf("%s: %s is Karpenter v1 already: there is nothing to convert; apply it as it is (kubectl apply -f), or simulate it (karpenter simulate)", named, current)
		}
		return "", fmt.Errorf("%s: cannot tell the format: no kOps Cluster or InstanceGroup (kops.k8s.io), eksctl ClusterConfig (eksctl.io), or v1alpha5 Provisioner / v1alpha1 AWSNodeTemplate found; name it: karpenter convert kops|eksctl|legacy FILE...", named)
	}
	return "", fmt.Errorf("%s: the files mix formats (%s): convert each with its own subcommand, karpenter convert %s FILE...", named, strings.Join(formats, ", "), strings.Join(formats, "|"))
}

// currentKarpenter names the first document of the current Karpenter APIs (karpenter.sh/v1,
// karpenter.k8s.aws/v1), as "NodePool default", or returns "" when there is none.
func currentKarpenter(sources []Source) string {
	for _, src := range sources {
		if src.APIVersion == "karpenter.sh/v1" || src.APIVersion == "karpenter.k8s.aws/v1" {
			return strings.TrimSpace(src.Kind + " " + src.Name)
		}
	}
	return ""
}
