package aws

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	corev1 "k8s.io/api/core/v1"

	awsv1 "github.com/openkarpenter/karpenter/pkg/apis/aws/v1"
	"github.com/openkarpenter/karpenter/pkg/cloudprovider"
)

// image is an AMI as the resolver sees it.
type image struct {
	id, name, arch string // arch is the Kubernetes architecture, amd64 or arm64
	created        time.Time
	deprecated     bool
	// variants are what an alias's SSM parameter says the image is for (standard, NVIDIA,
	// Neuron); none for an image selected otherwise.
	variants []variant
	// requirements are what else an alias's SSM parameter says of the image's nodes: a
	// Windows image's kubernetes.io/os and node.kubernetes.io/windows-build.
	requirements []corev1.NodeSelectorRequirement
}

// ec2Arch maps EC2 architectures to Kubernetes ones.
var ec2Arch = map[string]string{"x86_64": "amd64", "arm64": "arm64"}

// variant is a kind of EKS-optimized image: which instance types it is built for.
type variant string

// The variants of the EKS-optimized images, as Karpenter names them.
const (
	variantStandard variant = "standard"
	variantNvidia   variant = "nvidia"
	variantNeuron   variant = "neuron"
)

// requirements are what an instance type must satisfy to run an image of the variant, as
// Karpenter's: the standard image is for types with neither GPUs nor accelerators, the NVIDIA
// image for types with GPUs, the Neuron image for types with accelerators (Inferentia,
// Trainium).
func (v variant) requirements() []corev1.NodeSelectorRequirement {
	switch v {
	case variantStandard:
		return []corev1.NodeSelectorRequirement{
			{Key: awsv1.LabelInstanceAcceleratorCount, Operator: corev1.NodeSelectorOpDoesNotExist},
			{Key: awsv1.LabelInstanceGPUCount, Operator: corev1.NodeSelectorOpDoesNotExist},
		}
	case variantNvidia:
		return []corev1.NodeSelectorRequirement{{Key: awsv1.LabelInstanceGPUCount, Operator: corev1.NodeSelectorOpExists}}
	case variantNeuron:
		return []corev1.NodeSelectorRequirement{{Key: awsv1.LabelInstanceAcceleratorCount, Operator: corev1.NodeSelectorOpExists}}
	}
	return nil
}

// aliasParameter is an SSM public parameter an alias resolves through, the variants of the
// image it names, and what else its nodes must be (a Windows image's os and build).
type aliasParameter struct {
	name         string
	variants     []variant
	requirements []corev1.NodeSelectorRequirement
}

// windowsVersions are the Windows Server releases of the Windows AMI families, as the SSM
// parameters name them.
var windowsVersions = map[string]string{
	awsv1.AMIFamilyWindows2019: "2019",
	awsv1.AMIFamilyWindows2022: "2022",
	awsv1.AMIFamilyWindows2025: "2025",
}

// windowsParameter is the SSM public parameter of the EKS-optimized Windows Server Core image
// of a family (Windows2019, Windows2022, Windows2025) for a Kubernetes version, with the
// requirements of its nodes, as the AWS provider v1.15.2's Windows.DescribeImageQuery
// (pkg/providers/amifamily/windows.go): kubernetes.io/os windows and the family's
// node.kubernetes.io/windows-build. Windows images have no accelerated variants.
func windowsParameter(family, k8sVersion string) aliasParameter {
	build, _ := cloudprovider.WindowsBuild(family)
	return aliasParameter{
		name: fmt.Sprintf("/aws/service/ami-windows-latest/Windows_Server-%s-English-Core-EKS_Optimized-%s/image_id", windowsVersions[family], k8sVersion),
		requirements: []corev1.NodeSelectorRequirement{
			{Key: corev1.LabelOSStable, Operator: corev1.NodeSelectorOpIn, Values: []string{string(corev1.Windows)}},
			{Key: corev1.LabelWindowsBuild, Operator: corev1.NodeSelectorOpIn, Values: []string{build}},
		},
	}
}

// aliasParameters are the SSM public parameters an AMI alias resolves through, one per
// architecture and variant the family publishes, for a Kubernetes version ("1.35"), as
// Karpenter reads them: AL2023's standard, NVIDIA (x86_64 and arm64) and Neuron (x86_64)
// images; AL2's standard images and its GPU image (NVIDIA and Neuron); Bottlerocket's standard
// images (x86_64 also for Neuron) and its -nvidia images; the Windows families' one image
// (windowsParameter), @latest only, Windows2025 from Kubernetes 1.35.
func aliasParameters(alias, k8sVersion string) (family string, params []aliasParameter, err error) {
	name, version, ok := strings.Cut(alias, "@")
	if !ok || version == "" {
		return "", nil, fmt.Errorf("alias %q: must be family@version, such as al2023@latest", alias)
	}
	latest := version == "latest"
	add := func(name string, variants ...variant) {
		params = append(params, aliasParameter{name: name, variants: variants})
	}
	switch strings.ToLower(name) {
	case "al2023":
		for _, av := range []struct {
			arch    string
			variant variant
		}{{"x86_64", variantStandard}, {"arm64", variantStandard}, {"x86_64", variantNvidia}, {"arm64", variantNvidia}, {"x86_64", variantNeuron}} {
			release := "recommended"
			if !latest {
				release = fmt.Sprintf("amazon-eks-node-al2023-%s-%s-%s-%s", av.arch, av.variant, k8sVersion, version)
			}
			add(fmt.Sprintf("/aws/service/eks/optimized-ami/%s/amazon-linux-2023/%s/%s/%s/image_id", k8sVersion, av.arch, av.variant, release), av.variant)
		}
		return awsv1.AMIFamilyAL2023, params, nil
	case "al2":
		for _, flavour := range []struct {
			suffix, node string
			variants     []variant
		}{{"", "", []variant{variantStandard}}, {"-arm64", "-arm64", []variant{variantStandard}}, {"-gpu", "-gpu", []variant{variantNvidia, variantNeuron}}} {
			release := "recommended"
			if !latest {
				release = fmt.Sprintf("amazon-eks%s-node-%s-%s", flavour.node, k8sVersion, version)
			}
			add(fmt.Sprintf("/aws/service/eks/optimized-ami/%s/amazon-linux-2%s/%s/image_id", k8sVersion, flavour.suffix, release), flavour.variants...)
		}
		return awsv1.AMIFamilyAL2, params, nil
	case "bottlerocket":
		v := "latest"
		if !latest {
			v = strings.TrimPrefix(version, "v")
		}
		add(fmt.Sprintf("/aws/service/bottlerocket/aws-k8s-%s/x86_64/%s/image_id", k8sVersion, v), variantStandard, variantNeuron)
		add(fmt.Sprintf("/aws/service/bottlerocket/aws-k8s-%s/arm64/%s/image_id", k8sVersion, v), variantStandard)
		add(fmt.Sprintf("/aws/service/bottlerocket/aws-k8s-%s-nvidia/x86_64/%s/image_id", k8sVersion, v), variantNvidia)
		add(fmt.Sprintf("/aws/service/bottlerocket/aws-k8s-%s-nvidia/arm64/%s/image_id", k8sVersion, v), variantNvidia)
		return awsv1.AMIFamilyBottlerocket, params, nil
	case "windows2019", "windows2022", "windows2025":
		family := "Windows" + strings.TrimPrefix(strings.ToLower(name), "windows")
		if !latest {
			// The API server's CEL rule refuses this already ("windows families may only
			// specify version 'latest'").
			return "", nil, fmt.Errorf("alias %q: the Windows families publish @latest only", alias)
		}
		if family == awsv1.AMIFamilyWindows2025 {
			// As DescribeImageQueries' WS2025UnsupportedVersionError (amifamily/ami.go).
			if _, minor, _ := strings.Cut(k8sVersion, "."); minorBelow(minor, 35) {
				return "", nil, fmt.Errorf("alias %q: Windows Server 2025 requires EKS version 1.35 or higher, current version: %s", alias, k8sVersion)
			}
		}
		return family, []aliasParameter{windowsParameter(family, k8sVersion)}, nil
	}
	return "", nil, fmt.Errorf("alias %q: family %q is not supported: use al2023, al2, bottlerocket, windows2019, windows2022 or windows2025", alias, name)
}

// minorBelow reports whether a Kubernetes minor version ("34", "35") is below want; one that
// does not parse is not (as the AWS provider v1.15.2, which lets it through).
func minorBelow(minor string, want int) bool {
	n, err := strconv.Atoi(minor)
	return err == nil && n < want
}

// resolveAMIs finds the images the amiSelectorTerms select and keeps, for each set of
// requirements an image serves (its architecture and, for an alias, its variant: standard,
// NVIDIA or Neuron), the best: current images before deprecated ones, then the newest, as
// Karpenter does. A deprecated image is used, and reported (deprecated: true), only when no
// current one serves the same requirements. A term that selects nothing is an error: the
// NodeClass is then not ready rather than launching some other image.
func (p *Provider) resolveAMIs(ctx context.Context, nc *awsv1.EC2NodeClass) ([]awsv1.AMI, error) {
	now := p.opts.Clock.Now()
	var all []image
	for i, term := range nc.Spec.AMISelectorTerms {
		field := fmt.Sprintf("spec.amiSelectorTerms[%d]", i)
		var imgs []image
		var err error
		switch {
		case term.Alias != "":
			imgs, err = p.aliasImages(ctx, term.Alias, now)
			field += ".alias " + term.Alias
		case term.SSMParameter != "":
			imgs, err = p.parameterImages(ctx, term.SSMParameter, now)
			field += ".ssmParameter " + term.SSMParameter
		case term.ID != "":
			imgs, err = p.describeImages(ctx, &ec2.DescribeImagesInput{ImageIds: []string{term.ID}}, now)
			field += ".id " + term.ID
		default:
			in := &ec2.DescribeImagesInput{Filters: tagFilters(term.Tags), IncludeDeprecated: aws.Bool(true)}
			if term.Name != "" {
				in.Filters = append(in.Filters, ec2types.Filter{Name: aws.String("name"), Values: []string{term.Name}})
				// As Karpenter: a name alone finds your own images and Amazon's, never an image
				// a stranger published under the same name.
				in.Owners = []string{"self", "amazon"}
			}
			if term.Owner != "" {
				in.Owners = []string{term.Owner}
			}
			imgs, err = p.describeImages(ctx, in, now)
			field += " (" + describeTerm("", term.Name, term.Tags)
			if term.Owner != "" {
				field += ", owner " + term.Owner
			}
			field += ")"
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", field, err)
		}
		if len(imgs) == 0 {
			return nil, fmt.Errorf("%s matches no image", field)
		}
		all = append(all, imgs...)
	}
	// The best image per architecture and variant (an image not from an alias has none).
	type served struct {
		arch    string
		variant variant
	}
	best := map[served]image{}
	for _, im := range all {
		if im.arch == "" {
			continue
		}
		variants := im.variants
		if len(variants) == 0 {
			variants = []variant{""}
		}
		for _, v := range variants {
			key := served{im.arch, v}
			if held, ok := best[key]; !ok || betterImage(im, held) {
				best[key] = im
			}
		}
	}
	if len(best) == 0 {
		return nil, errors.New("spec.amiSelectorTerms select no image of a supported architecture (x86_64 or arm64)")
	}
	// Newest first (Karpenter's order), then by what they serve, so the status is stable.
	keys := slices.Collect(maps.Keys(best))
	slices.SortFunc(keys, func(a, b served) int {
		return cmp.Or(best[b].created.Compare(best[a].created), cmp.Compare(best[a].id, best[b].id), cmp.Compare(a.arch, b.arch), cmp.Compare(a.variant, b.variant))
	})
	out := make([]awsv1.AMI, 0, len(keys))
	for _, k := range keys {
		im := best[k]
		reqs := append([]corev1.NodeSelectorRequirement{{Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: []string{k.arch}}}, k.variant.requirements()...)
		reqs = append(reqs, im.requirements...)
		out = append(out, awsv1.AMI{ID: im.id, Name: im.name, Requirements: reqs, Deprecated: im.deprecated})
	}
	return out, nil
}

// betterImage reports whether a should be preferred to b for the same requirements: a current
// image before a deprecated one, then the newer, then the smaller ID.
func betterImage(a, b image) bool {
	if a.deprecated != b.deprecated {
		return !a.deprecated
	}
	if !a.created.Equal(b.created) {
		return a.created.After(b.created)
	}
	return a.id < b.id
}

// aliasImages resolves an alias through its SSM parameters; parameters the family does not
// publish for this release are skipped (as Karpenter does), but at least one must resolve.
func (p *Provider) aliasImages(ctx context.Context, alias string, now time.Time) ([]image, error) {
	version, err := p.kubernetesVersion(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the cluster's Kubernetes version: %w", err)
	}
	_, params, err := aliasParameters(alias, version)
	if err != nil {
		return nil, err
	}
	variants := map[string][]variant{}
	requirements := map[string][]corev1.NodeSelectorRequirement{}
	var ids, missing []string
	for _, param := range params {
		out, err := p.clients.SSM.GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String(param.name)})
		if isNotFound(err) {
			missing = append(missing, param.name)
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("reading SSM parameter %s: %w", param.name, err)
		}
		id := aws.ToString(out.Parameter.Value)
		if _, seen := variants[id]; !seen {
			ids = append(ids, id)
		}
		variants[id] = append(variants[id], param.variants...)
		requirements[id] = param.requirements
	}
	if len(ids) == 0 {
		return nil, fmt.Errorf("no such release for Kubernetes %s: SSM parameters %s not found", version, strings.Join(missing, ", "))
	}
	imgs, err := p.describeImages(ctx, &ec2.DescribeImagesInput{ImageIds: ids}, now)
	for i := range imgs {
		imgs[i].variants = variants[imgs[i].id]
		imgs[i].requirements = requirements[imgs[i].id]
	}
	return imgs, err
}

// parameterImages resolves a user's SSM parameter holding an image ID.
func (p *Provider) parameterImages(ctx context.Context, name string, now time.Time) ([]image, error) {
	out, err := p.clients.SSM.GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String(name)})
	if err != nil {
		if isNotFound(err) {
			return nil, fmt.Errorf("SSM parameter %s not found", name)
		}
		return nil, fmt.Errorf("reading SSM parameter %s: %w", name, err)
	}
	return p.describeImages(ctx, &ec2.DescribeImagesInput{ImageIds: []string{aws.ToString(out.Parameter.Value)}}, now)
}

// describeImages lists images, marking those past their deprecation time. Unknown IDs give an
// error naming them.
func (p *Provider) describeImages(ctx context.Context, in *ec2.DescribeImagesInput, now time.Time) ([]image, error) {
	var out []image
	pages := ec2.NewDescribeImagesPaginator(p.clients.EC2, in)
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			if isNotFound(err) {
				return nil, fmt.Errorf("image %s not found", strings.Join(in.ImageIds, ", "))
			}
			return nil, fmt.Errorf("describing images: %w", err)
		}
		for _, im := range page.Images {
			if im.State != "" && im.State != ec2types.ImageStateAvailable {
				continue
			}
			created, _ := time.Parse(time.RFC3339, aws.ToString(im.CreationDate))
			deprecated := false
			if d := aws.ToString(im.DeprecationTime); d != "" {
				if t, err := time.Parse(time.RFC3339, d); err == nil && !t.After(now) {
					deprecated = true
				}
			}
			out = append(out, image{id: aws.ToString(im.ImageId), name: aws.ToString(im.Name), arch: ec2Arch[string(im.Architecture)], created: created, deprecated: deprecated})
		}
	}
	return out, nil
}
