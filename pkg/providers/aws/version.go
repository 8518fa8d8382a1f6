package aws

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eks"
)

// eksVersionTTL is how long the version EKS reported is used before it is asked again: a
// cluster upgrade shows within that time.
const eksVersionTTL = 10 * time.Minute

// cachedVersion is a Kubernetes version read at a time.
type cachedVersion struct {
	mu      sync.Mutex
	version string
	read    time.Time
}

// kubernetesVersion is the cluster's "major.minor" version: the API server's, or under
// Options.EKSControlPlane the one EKS DescribeCluster reports, as Karpenter's version
// provider reads it (providers/version, v1.15.2).
func (p *Provider) kubernetesVersion(ctx context.Context) (string, error) {
	if !p.opts.EKSControlPlane {
		return p.opts.KubernetesVersion()
	}
	c := &p.eksVersion
	c.mu.Lock()
	defer c.mu.Unlock()
	now := p.opts.Clock.Now()
	if c.version != "" && now.Sub(c.read) < eksVersionTTL {
		return c.version, nil
	}
	out, err := p.clients.EKS.DescribeCluster(ctx, &eks.DescribeClusterInput{Name: aws.String(p.opts.ClusterName)})
	if err != nil {
		return "", fmt.Errorf("describing EKS cluster %s for its Kubernetes version (EKS_CONTROL_PLANE is set): %w", p.opts.ClusterName, err)
	}
	version := ""
	if out.Cluster != nil {
		version = strings.TrimSpace(aws.ToString(out.Cluster.Version))
	}
	if version == "" {
		return "", fmt.Errorf("EKS cluster %s reports no Kubernetes version (EKS_CONTROL_PLANE is set)", p.opts.ClusterName)
	}
	c.version, c.read = version, now
	return version, nil
}
