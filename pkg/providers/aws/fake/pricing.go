package fake

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"net/http"
	"strconv"
	"strings"
)

func (a *AWS) servePricing(j *jsonCall) {
	if a.countCall(j.action) {
		j.fail(http.StatusBadRequest, "ThrottlingException", "Rate exceeded")
		return
	}
	switch j.action {
	case "GetProducts":
		a.authorize(j.r, "pricing:GetProducts", "*", nil, nil)
		a.getProducts(j)
	default:
		j.fail(http.StatusBadRequest, "UnknownOperationException", fmt.Sprintf("the fake does not serve AWSPriceListService.%s", j.action))
	}
}

type pricingFilter struct {
	Type  string
	Field string
	Value string
}

// getProducts answers GetProducts for AmazonEC2: one Linux, shared-tenancy, on-demand product
// per priced instance type of the catalog, priced at the catalog's on-demand price in the
// fake's region.
func (a *AWS) getProducts(j *jsonCall) {
	var in struct {
		ServiceCode   *string
		FormatVersion *string
		Filters       []pricingFilter
		MaxResults    *int
		NextToken     *string
	}
	if !j.decode(&in) {
		return
	}
	if in.ServiceCode == nil || *in.ServiceCode == "" {
		j.fail(http.StatusBadRequest, "InvalidParameterException", "ServiceCode is required")
		return
	}
	if *in.ServiceCode != "AmazonEC2" {
		j.fail(http.StatusBadRequest, "NotFoundException", fmt.Sprintf("the fake knows no products of service %s", *in.ServiceCode))
		return
	}
	format := "aws_v1"
	if in.FormatVersion != nil && *in.FormatVersion != "aws_v1" {
		j.fail(http.StatusBadRequest, "InvalidParameterException", "Invalid FormatVersion: "+*in.FormatVersion)
		return
	}
	size := 100
	if in.MaxResults != nil {
		if *in.MaxResults < 1 || *in.MaxResults > 100 {
			j.fail(http.StatusBadRequest, "InvalidParameterException", "MaxResults must be between 1 and 100")
			return
		}
		size = *in.MaxResults
	}
	for _, f := range in.Filters {
		switch f.Type {
		case "TERM_MATCH", "EQUALS", "CONTAINS", "ANY_OF", "NONE_OF":
		default:
			j.fail(http.StatusBadRequest, "InvalidParameterException", "Invalid filter type: "+f.Type)
			return
		}
	}
	a.mu.Lock()
	var docs []string
	for _, e := range a.types {
		if !e.HasPrice() {
			continue
		}
		attrs := map[string]string{
			"servicecode": "AmazonEC2", "instanceType": e.Name, "instanceFamily": "General purpose", "regionCode": a.opts.Region,
			"location": regionNames[a.opts.Region], "locationType": "AWS Region", "operatingSystem": "Linux", "preInstalledSw": "NA",
			"tenancy": "Shared", "capacitystatus": "Used", "marketoption": "OnDemand", "licenseModel": "No License required",
			"operation": "RunInstances", "usagetype": strings.ToUpper(regionShortName(a.opts.Region)) + "-BoxUsage:" + e.Name,
			"vcpu": strconv.Itoa(e.VCPU), "memory": formatGiB(e.MemoryMiB), "servicename": "Amazon Elastic Compute Cloud",
			"currentGeneration": map[bool]string{true: "Yes", false: "No"}[e.Generation == 0 || e.Generation > 3],
		}
		if e.GPUCount > 0 {
			attrs["gpu"] = strconv.Itoa(e.GPUCount)
		}
		if !matchPricing(in.Filters, attrs) {
			continue
		}
		sku := skuOf(a.opts.Region, e.Name)
		const offer, rate = "JRTCKXETXF", "6YS6EN2CT7"
		doc := map[string]any{
			"product":     map[string]any{"productFamily": "Compute Instance", "attributes": attrs, "sku": sku},
			"serviceCode": "AmazonEC2", "version": "20260101000000", "publicationDate": "2026-01-01T00:00:00Z",
			"terms": map[string]any{"OnDemand": map[string]any{sku + "." + offer: map[string]any{
				"offerTermCode": offer, "sku": sku, "effectiveDate": "2026-01-01T00:00:00Z", "termAttributes": map[string]any{},
				"priceDimensions": map[string]any{sku + "." + offer + "." + rate: map[string]any{
					"rateCode": sku + "." + offer + "." + rate, "unit": "Hrs", "beginRange": "0", "endRange": "Inf",
					"description":  fmt.Sprintf("$%.4f per On Demand Linux %s Instance Hour", e.OnDemandPrice, e.Name),
					"appliesTo":    []string{},
					"pricePerUnit": map[string]string{"USD": strconv.FormatFloat(e.OnDemandPrice, 'f', 10, 64)},
				}},
			}}},
		}
		b, _ := json.Marshal(doc)
		docs = append(docs, string(b))
	}
	a.mu.Unlock()
	token := ""
	if in.NextToken != nil {
		token = *in.NextToken
	}
	start, end, next, err := page(len(docs), token, size)
	if err != nil {
		j.fail(http.StatusBadRequest, "InvalidNextTokenException", "Invalid NextToken")
		return
	}
	out := map[string]any{"FormatVersion": format, "PriceList": docs[start:end]}
	if next != "" {
		out["NextToken"] = next
	}
	j.respond(out)
}

func matchPricing(filters []pricingFilter, attrs map[string]string) bool {
	for _, f := range filters {
		var have string
		found := false
		for k, v := range attrs {
			if strings.EqualFold(k, f.Field) {
				have, found = v, true
			}
		}
		switch f.Type {
		case "TERM_MATCH", "EQUALS":
			if !found || !strings.EqualFold(have, f.Value) {
				return false
			}
		case "CONTAINS":
			if !found || !strings.Contains(strings.ToLower(have), strings.ToLower(f.Value)) {
				return false
			}
		case "ANY_OF", "NONE_OF":
			any := false
			for _, v := range strings.Split(f.Value, ",") {
				if found && strings.EqualFold(strings.TrimSpace(v), have) {
					any = true
				}
			}
			if any != (f.Type == "ANY_OF") {
				return false
			}
		}
	}
	return true
}

func formatGiB(mib int64) string {
	return strconv.FormatFloat(float64(mib)/1024, 'f', -1, 64) + " GiB"
}

// skuOf is a stable, SKU-shaped identifier of a product.
func skuOf(region, instanceType string) string {
	h := fnv.New64a()
	_, _ = h.Write([]byte(region + "/" + instanceType))
	const chars = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	v := h.Sum64()
	var sb strings.Builder
	for range 16 {
		sb.WriteByte(chars[v%uint64(len(chars))])
		v /= uint64(len(chars))
		if v == 0 {
			v = h.Sum64() >> 7
		}
	}
	return sb.String()
}

var regionNames = map[string]string{
	"us-east-1": "US East (N. Virginia)", "us-east-2": "US East (Ohio)", "us-west-1": "US West (N. California)", "us-west-2": "US West (Oregon)",
	"eu-west-1": "EU (Ireland)", "eu-central-1": "EU (Frankfurt)", "ap-southeast-1": "Asia Pacific (Singapore)", "ap-northeast-1": "Asia Pacific (Tokyo)",
}
