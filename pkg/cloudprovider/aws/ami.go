package aws

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	corev1 "k8s.io/api/core/v1"

	awsv1 "github.com/openkarpenter/karpenter/pkg/apis/aws/v1"
)

// image is an AMI as the resolver sees it.
type image struct {
	id, name, arch string // arch is the Kubernetes architecture, amd64 or arm64
	created        time.Time
	deprecated     bool
}

// ec2Arch maps EC2 architectures to Kubernetes ones.
var ec2Arch = map[string]string{"x86_64": "amd64", "arm64": "arm64"}

// aliasParameters are the SSM public parameters an AMI alias resolves through, one per
// architecture the family publishes, for a Kubernetes version ("1.35").
func aliasParameters(alias, k8sVersion string) (family string, params []string, err error) {
	name, version, ok := strings.Cut(alias, "@")
	if !ok || version == "" {
		return "", nil, fmt.Errorf("alias %q: must be family@version, such as al2023@latest", alias)
	}
	latest := version == "latest"
	switch strings.ToLower(name) {
	case "al2023":
		for _, arch := range []string{"x86_64", "arm64"} {
			if latest {
				params = append(params, fmt.Sprintf("/aws/service/eks/optimized-ami/%s/amazon-linux-2023/%s/standard/recommended/image_id", k8sVersion, arch))
			} else {
				params = append(params, fmt.Sprintf("/aws/service/eks/optimized-ami/%s/amazon-linux-2023/%s/standard/amazon-eks-node-al2023-%s-standard-%s-%s/image_id", k8sVersion, arch, arch, k8sVersion, version))
			}
		}
		return awsv1.AMIFamilyAL2023, params, nil
	case "al2":
		for _, suffix := range []string{"", "-arm64"} {
			if latest {
				params = append(params, fmt.Sprintf("/aws/service/eks/optimized-ami/%s/amazon-linux-2%s/recommended/image_id", k8sVersion, suffix))
			} else {
				params = append(params, fmt.Sprintf("/aws/service/eks/optimized-ami/%s/amazon-linux-2%s/amazon-eks%s-node-%s-%s/image_id", k8sVersion, suffix, suffix, k8sVersion, version))
			}
		}
		return awsv1.AMIFamilyAL2, params, nil
	case "bottlerocket":
		v := "latest"
		if !latest {
			v = strings.TrimPrefix(version, "v")
		}
		for _, arch := range []string{"x86_64", "arm64"} {
			params = append(params, fmt.Sprintf("/aws/service/bottlerocket/aws-k8s-%s/%s/%s/image_id", k8sVersion, arch, v))
		}
		return awsv1.AMIFamilyBottlerocket, params, nil
	}
	return "", nil, fmt.Errorf("alias %q: family %q is not supported: use al2023, al2 or bottlerocket", alias, name)
}

// resolveAMIs finds the images the amiSelectorTerms select and keeps, per architecture, the
// newest. A term that selects nothing, or only deprecated images, is an error: the NodeClass
// is then not ready rather than launching some other image.
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
			}
			if term.Owner != "" {
				in.Owners = []string{term.Owner}
			}
			imgs, err = p.describeImages(ctx, in, now)
			field += " (" + describeTerm("", term.Name, term.Tags) + ")"
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", field, err)
		}
		usable := slices.DeleteFunc(slices.Clone(imgs), func(im image) bool { return im.deprecated })
		switch {
		case len(imgs) == 0:
			return nil, fmt.Errorf("%s matches no image", field)
		case len(usable) == 0:
			ids := make([]string, len(imgs))
			for j, im := range imgs {
				ids[j] = im.id
			}
			return nil, fmt.Errorf("%s matches only deprecated images (%s): select a current image", field, strings.Join(ids, ", "))
		}
		all = append(all, usable...)
	}
	// Newest first; then one image per architecture.
	slices.SortFunc(all, func(a, b image) int {
		return cmp.Or(b.created.Compare(a.created), cmp.Compare(a.id, b.id))
	})
	var out []awsv1.AMI
	seen := map[string]bool{}
	for _, im := range all {
		if im.arch == "" || seen[im.arch] {
			continue
		}
		seen[im.arch] = true
		out = append(out, awsv1.AMI{ID: im.id, Name: im.name, Requirements: []corev1.NodeSelectorRequirement{{
			Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: []string{im.arch},
		}}})
	}
	if len(out) == 0 {
		return nil, errors.New("spec.amiSelectorTerms select no image of a supported architecture (x86_64 or arm64)")
	}
	return out, nil
}

// aliasImages resolves an alias through its SSM parameters; architectures the family does not
// publish are skipped, but at least one must resolve.
func (p *Provider) aliasImages(ctx context.Context, alias string, now time.Time) ([]image, error) {
	version, err := p.opts.KubernetesVersion()
	if err != nil {
		return nil, fmt.Errorf("reading the cluster's Kubernetes version: %w", err)
	}
	_, params, err := aliasParameters(alias, version)
	if err != nil {
		return nil, err
	}
	var ids, missing []string
	for _, name := range params {
		out, err := p.clients.SSM.GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String(name)})
		if isNotFound(err) {
			missing = append(missing, name)
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("reading SSM parameter %s: %w", name, err)
		}
		ids = append(ids, aws.ToString(out.Parameter.Value))
	}
	if len(ids) == 0 {
		return nil, fmt.Errorf("no such release for Kubernetes %s: SSM parameters %s not found", version, strings.Join(missing, ", "))
	}
	return p.describeImages(ctx, &ec2.DescribeImagesInput{ImageIds: ids}, now)
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
