package fake

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// Cluster is a seeded EKS cluster.
type Cluster struct {
	// Name is the cluster name.
	Name string
	// Endpoint is the API server URL.
	Endpoint string
	// CAData is the base64-encoded cluster CA certificate (certificateAuthority.data).
	CAData string
	// ServiceCIDR is kubernetesNetworkConfig.serviceIpv4Cidr; default 10.100.0.0/16.
	ServiceCIDR string
	// ServiceIPv6CIDR is kubernetesNetworkConfig.serviceIpv6Cidr, for IPv6 clusters.
	ServiceIPv6CIDR string
	// IPFamily is ipv4 (default) or ipv6.
	IPFamily string
	// Version is the Kubernetes version, such as 1.31.
	Version string
}

// AddCluster seeds an EKS cluster.
func (a *AWS) AddCluster(c Cluster) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if c.ServiceCIDR == "" && c.IPFamily != "ipv6" {
		c.ServiceCIDR = "10.100.0.0/16"
	}
	if c.IPFamily == "" {
		c.IPFamily = "ipv4"
	}
	a.clusters[c.Name] = &c
}

func (a *AWS) serveEKS(w http.ResponseWriter, r *http.Request) {
	fail := func(status int, code, message string) { a.restJSONError(w, status, code, message) }
	name, err := url.PathUnescape(strings.TrimPrefix(r.URL.EscapedPath(), "/clusters/"))
	if r.Method != http.MethodGet || err != nil || name == "" || strings.Contains(name, "/") {
		a.countCall("UnknownOperation")
		fail(http.StatusNotFound, "UnknownOperationException", fmt.Sprintf("the fake does not serve %s %s", r.Method, r.URL.Path))
		return
	}
	if a.countCall("DescribeCluster") {
		fail(http.StatusTooManyRequests, "ThrottlingException", "Rate exceeded")
		return
	}
	a.authorize(r, "eks:DescribeCluster", a.clusterARN(name), nil, nil)
	a.mu.Lock()
	c, ok := a.clusters[name]
	var cc Cluster
	if ok {
		cc = *c
	}
	created := a.now()
	a.mu.Unlock()
	if !ok {
		fail(http.StatusNotFound, "ResourceNotFoundException", fmt.Sprintf("No cluster found for name: %s.", name))
		return
	}
	network := map[string]any{"ipFamily": cc.IPFamily}
	if cc.ServiceCIDR != "" {
		network["serviceIpv4Cidr"] = cc.ServiceCIDR
	}
	if cc.ServiceIPv6CIDR != "" {
		network["serviceIpv6Cidr"] = cc.ServiceIPv6CIDR
	}
	body := map[string]any{"cluster": map[string]any{
		"name":                    cc.Name,
		"arn":                     a.clusterARN(cc.Name),
		"createdAt":               epoch(created),
		"version":                 cc.Version,
		"endpoint":                cc.Endpoint,
		"status":                  "ACTIVE",
		"platformVersion":         "eks.1",
		"certificateAuthority":    map[string]any{"data": cc.CAData},
		"kubernetesNetworkConfig": network,
	}}
	a.restJSON(w, http.StatusOK, body)
}
