package fake_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eks"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	iamtypes "github.com/aws/aws-sdk-go-v2/service/iam/types"
	"github.com/aws/aws-sdk-go-v2/service/pricing"
	pricingtypes "github.com/aws/aws-sdk-go-v2/service/pricing/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/openkarpenter/karpenter/pkg/cloudprovider/catalog"
	"github.com/openkarpenter/karpenter/pkg/providers/aws/fake"
)

func TestIAM(t *testing.T) {
	f := newFake(t, fake.Options{})
	c := iam.NewFromConfig(f.Config())
	_, err := c.GetInstanceProfile(ctx, &iam.GetInstanceProfileInput{InstanceProfileName: aws.String("p")})
	var nse *iamtypes.NoSuchEntityException
	if apiCode(err) != "NoSuchEntity" || !errors.As(err, &nse) {
		t.Fatalf("missing profile: %v", err)
	}
	out, err := c.CreateInstanceProfile(ctx, &iam.CreateInstanceProfileInput{InstanceProfileName: aws.String("p"), Path: aws.String("/karpenter/"),
		Tags: []iamtypes.Tag{{Key: aws.String("karpenter.sh/managed-by"), Value: aws.String("c")}}})
	if err != nil {
		t.Fatal(err)
	}
	p := out.InstanceProfile
	if aws.ToString(p.Arn) != "arn:aws:iam::111122223333:instance-profile/karpenter/p" || len(aws.ToString(p.InstanceProfileId)) != 21 || aws.ToString(p.Path) != "/karpenter/" ||
		p.CreateDate == nil || len(p.Tags) != 1 || len(p.Roles) != 0 {
		t.Errorf("unexpected %+v", p)
	}
	_, err = c.CreateInstanceProfile(ctx, &iam.CreateInstanceProfileInput{InstanceProfileName: aws.String("p")})
	if apiCode(err) != "EntityAlreadyExists" {
		t.Errorf("duplicate: %v", err)
	}
	_, err = c.AddRoleToInstanceProfile(ctx, &iam.AddRoleToInstanceProfileInput{InstanceProfileName: aws.String("p"), RoleName: aws.String("r")})
	if apiCode(err) != "NoSuchEntity" {
		t.Errorf("missing role: %v", err)
	}
	f.AddRole("r")
	f.AddRole("r2")
	if _, err := c.AddRoleToInstanceProfile(ctx, &iam.AddRoleToInstanceProfileInput{InstanceProfileName: aws.String("p"), RoleName: aws.String("r")}); err != nil {
		t.Fatal(err)
	}
	_, err = c.AddRoleToInstanceProfile(ctx, &iam.AddRoleToInstanceProfileInput{InstanceProfileName: aws.String("p"), RoleName: aws.String("r2")})
	if apiCode(err) != "LimitExceeded" {
		t.Errorf("second role: %v", err)
	}
	got, err := c.GetInstanceProfile(ctx, &iam.GetInstanceProfileInput{InstanceProfileName: aws.String("p")})
	if err != nil || len(got.InstanceProfile.Roles) != 1 || aws.ToString(got.InstanceProfile.Roles[0].RoleName) != "r" || aws.ToString(got.InstanceProfile.Roles[0].Arn) == "" ||
		aws.ToString(got.InstanceProfile.Roles[0].RoleId) == "" {
		t.Fatalf("get: %v %+v", err, got)
	}
	if _, err := c.TagInstanceProfile(ctx, &iam.TagInstanceProfileInput{InstanceProfileName: aws.String("p"), Tags: []iamtypes.Tag{{Key: aws.String("k"), Value: aws.String("v")}}}); err != nil {
		t.Fatal(err)
	}
	if ps := f.InstanceProfiles(); len(ps) != 1 || ps[0].Tags["k"] != "v" || len(ps[0].Roles) != 1 {
		t.Errorf("inspection %+v", ps)
	}
	_, err = c.DeleteInstanceProfile(ctx, &iam.DeleteInstanceProfileInput{InstanceProfileName: aws.String("p")})
	if apiCode(err) != "DeleteConflict" {
		t.Errorf("delete with role: %v", err)
	}
	role, err := c.GetRole(ctx, &iam.GetRoleInput{RoleName: aws.String("r")})
	if err != nil || aws.ToString(role.Role.Arn) != "arn:aws:iam::111122223333:role/r" {
		t.Errorf("get role: %v", err)
	}
	if _, err := c.GetRole(ctx, &iam.GetRoleInput{RoleName: aws.String("zz")}); apiCode(err) != "NoSuchEntity" {
		t.Errorf("missing role: %v", err)
	}
	for _, n := range []string{"q1", "q2", "q3"} {
		if _, err := c.CreateInstanceProfile(ctx, &iam.CreateInstanceProfileInput{InstanceProfileName: aws.String(n), Path: aws.String("/karpenter/")}); err != nil {
			t.Fatal(err)
		}
	}
	pg := iam.NewListInstanceProfilesPaginator(c, &iam.ListInstanceProfilesInput{PathPrefix: aws.String("/karpenter/"), MaxItems: aws.Int32(2)})
	n := 0
	for pg.HasMorePages() {
		out, err := pg.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		n += len(out.InstanceProfiles)
	}
	if n != 4 {
		t.Errorf("listed %d profiles", n)
	}
	if _, err := c.RemoveRoleFromInstanceProfile(ctx, &iam.RemoveRoleFromInstanceProfileInput{InstanceProfileName: aws.String("p"), RoleName: aws.String("r")}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.DeleteInstanceProfile(ctx, &iam.DeleteInstanceProfileInput{InstanceProfileName: aws.String("p")}); err != nil {
		t.Fatal(err)
	}
	f.Throttle("GetInstanceProfile", 1)
	if _, err := c.GetInstanceProfile(ctx, &iam.GetInstanceProfileInput{InstanceProfileName: aws.String("q1")}); err != nil {
		t.Errorf("throttled once: %v", err)
	}
}

func TestSQS(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	f := newFake(t, fake.Options{Clock: clk})
	c := sqs.NewFromConfig(f.Config())
	_, err := c.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String("interruptions")})
	var qdne *sqstypes.QueueDoesNotExist
	if apiCode(err) != "AWS.SimpleQueueService.NonExistentQueue" || !errors.As(err, &qdne) {
		t.Fatalf("missing queue: %v", err)
	}
	url := f.CreateQueue("interruptions")
	out, err := c.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String("interruptions")})
	if err != nil || aws.ToString(out.QueueUrl) != url {
		t.Fatalf("GetQueueUrl: %v %v", err, out)
	}
	if _, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 11}); apiCode(err) != "InvalidParameterValue" {
		t.Errorf("11 messages: %v", err)
	}
	if _, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(f.URL() + "/111122223333/nope")}); apiCode(err) != "AWS.SimpleQueueService.NonExistentQueue" {
		t.Errorf("receive from missing queue: %v", err)
	}
	// Long poll: the call waits until a message arrives.
	type result struct {
		out *sqs.ReceiveMessageOutput
		err error
	}
	done := make(chan result, 1)
	go func() {
		out, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10, WaitTimeSeconds: 20,
			MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{"All"}})
		done <- result{out, err}
	}()
	waitFor(t, clk.HasWaiters)
	f.SendMessage("interruptions", `{"detail-type":"EC2 Spot Instance Interruption Warning"}`)
	r := <-done
	if r.err != nil || len(r.out.Messages) != 1 {
		t.Fatalf("long poll: %v %+v", r.err, r.out)
	}
	m := r.out.Messages[0]
	if aws.ToString(m.Body) != `{"detail-type":"EC2 Spot Instance Interruption Warning"}` || aws.ToString(m.MessageId) == "" || aws.ToString(m.ReceiptHandle) == "" ||
		m.Attributes["ApproximateReceiveCount"] != "1" || m.Attributes["SentTimestamp"] == "" {
		t.Errorf("unexpected message %+v", m)
	}
	// In flight: invisible until the visibility timeout passes.
	empty, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url)})
	if err != nil || len(empty.Messages) != 0 {
		t.Fatalf("in flight message received again: %v %+v", err, empty)
	}
	// A long poll ends when the wait time passes on the fake clock.
	go func() {
		out, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), WaitTimeSeconds: 5})
		done <- result{out, err}
	}()
	waitFor(t, clk.HasWaiters)
	clk.Step(5 * time.Second)
	if r := <-done; r.err != nil || len(r.out.Messages) != 0 {
		t.Fatalf("timed out poll: %v %+v", r.err, r.out)
	}
	clk.Step(26 * time.Second)
	again, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{"ApproximateReceiveCount"}})
	if err != nil || len(again.Messages) != 1 || again.Messages[0].Attributes["ApproximateReceiveCount"] != "2" {
		t.Fatalf("reappeared message: %v %+v", err, again)
	}
	if f.QueueMessages("interruptions") != 1 {
		t.Errorf("queue has %d messages", f.QueueMessages("interruptions"))
	}
	if _, err := c.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: again.Messages[0].ReceiptHandle}); err != nil {
		t.Fatal(err)
	}
	if f.QueueMessages("interruptions") != 0 {
		t.Errorf("message not deleted")
	}
	_, err = c.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: aws.String("garbage")})
	if apiCode(err) != "ReceiptHandleIsInvalid" {
		t.Errorf("bad handle: %v", err)
	}
	// A long poll ends with the caller's context.
	cctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if _, err := c.ReceiveMessage(cctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), WaitTimeSeconds: 20}); err == nil {
		t.Errorf("cancelled poll succeeded")
	}
	f.Throttle("ReceiveMessage", 1)
	if _, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url)}); err != nil {
		t.Errorf("throttled once: %v", err)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatal("condition never held")
		}
		time.Sleep(time.Millisecond)
	}
}

func TestPricing(t *testing.T) {
	f := newFake(t, fake.Options{})
	c := pricing.NewFromConfig(f.Config())
	filters := []pricingtypes.Filter{}
	for k, v := range map[string]string{"regionCode": "us-west-2", "serviceCode": "AmazonEC2", "preInstalledSw": "NA", "operatingSystem": "Linux", "capacitystatus": "Used",
		"marketoption": "OnDemand", "tenancy": "Shared"} {
		filters = append(filters, pricingtypes.Filter{Type: pricingtypes.FilterTypeTermMatch, Field: aws.String(k), Value: aws.String(v)})
	}
	p := pricing.NewGetProductsPaginator(c, &pricing.GetProductsInput{ServiceCode: aws.String("AmazonEC2"), FormatVersion: aws.String("aws_v1"), Filters: filters, MaxResults: aws.Int32(100)})
	entries, _ := catalog.Load()
	want := map[string]float64{}
	for _, e := range entries {
		if e.HasPrice() {
			want[e.Name] = e.OnDemandPrice
		}
	}
	n := 0
	for p.HasMorePages() {
		out, err := p.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, doc := range out.PriceList {
			var d struct {
				Product struct {
					Attributes map[string]string `json:"attributes"`
				} `json:"product"`
				Terms struct {
					OnDemand map[string]struct {
						PriceDimensions map[string]struct {
							PricePerUnit map[string]string `json:"pricePerUnit"`
						} `json:"priceDimensions"`
					} `json:"OnDemand"`
				} `json:"terms"`
			}
			if err := json.Unmarshal([]byte(doc), &d); err != nil {
				t.Fatal(err)
			}
			it := d.Product.Attributes["instanceType"]
			for _, term := range d.Terms.OnDemand {
				for _, dim := range term.PriceDimensions {
					var got float64
					if err := json.Unmarshal([]byte(dim.PricePerUnit["USD"]), &got); err != nil || got != want[it] {
						t.Fatalf("%s: price %s, want %v", it, dim.PricePerUnit["USD"], want[it])
					}
				}
			}
			n++
		}
	}
	if n != len(want) {
		t.Errorf("got %d products, want %d", n, len(want))
	}
	out, err := c.GetProducts(ctx, &pricing.GetProductsInput{ServiceCode: aws.String("AmazonEC2"),
		Filters: []pricingtypes.Filter{{Type: pricingtypes.FilterTypeTermMatch, Field: aws.String("instanceType"), Value: aws.String("m5.large")}}})
	if err != nil || len(out.PriceList) != 1 {
		t.Fatalf("one type: %v %+v", err, out)
	}
	f.Throttle("GetProducts", 1)
	if _, err := c.GetProducts(ctx, &pricing.GetProductsInput{ServiceCode: aws.String("AmazonEC2"), MaxResults: aws.Int32(1)}); err != nil {
		t.Errorf("throttled once: %v", err)
	}
}

func TestEKS(t *testing.T) {
	f := newFake(t, fake.Options{})
	c := eks.NewFromConfig(f.Config())
	_, err := c.DescribeCluster(ctx, &eks.DescribeClusterInput{Name: aws.String("my-cluster")})
	if apiCode(err) != "ResourceNotFoundException" {
		t.Fatalf("missing cluster: %v", err)
	}
	f.AddCluster(fake.Cluster{Name: "my-cluster", Endpoint: "https://ABC.gr7.us-west-2.eks.amazonaws.com", CAData: "Q0FEQVRB", Version: "1.31"})
	out, err := c.DescribeCluster(ctx, &eks.DescribeClusterInput{Name: aws.String("my-cluster")})
	if err != nil {
		t.Fatal(err)
	}
	cl := out.Cluster
	if aws.ToString(cl.Name) != "my-cluster" || aws.ToString(cl.Endpoint) != "https://ABC.gr7.us-west-2.eks.amazonaws.com" || cl.Status != "ACTIVE" || aws.ToString(cl.Version) != "1.31" ||
		aws.ToString(cl.CertificateAuthority.Data) != "Q0FEQVRB" || aws.ToString(cl.KubernetesNetworkConfig.ServiceIpv4Cidr) != "10.100.0.0/16" || cl.KubernetesNetworkConfig.IpFamily != "ipv4" ||
		aws.ToString(cl.Arn) != "arn:aws:eks:us-west-2:111122223333:cluster/my-cluster" {
		t.Errorf("unexpected %+v", cl)
	}
	if f.Calls("DescribeCluster") != 2 {
		t.Errorf("calls %d", f.Calls("DescribeCluster"))
	}
}
