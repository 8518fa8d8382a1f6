package aws

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/arczonalshift"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/eks"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	"github.com/aws/aws-sdk-go-v2/service/pricing"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	"github.com/aws/smithy-go"
)

// Clients are the AWS API clients the provider calls.
type Clients struct {
	// EC2 resolves subnets, security groups, images and instance types, and launches,
	// describes and terminates instances.
	EC2 *ec2.Client
	// SSM resolves AMI aliases and ssmParameter terms.
	SSM *ssm.Client
	// IAM manages the instance profiles of NodeClasses that name a role.
	IAM *iam.Client
	// SQS receives interruption messages.
	SQS *sqs.Client
	// Pricing reads on-demand prices.
	Pricing *pricing.Client
	// EKS describes the cluster (endpoint, CA, service CIDR) for node user data.
	EKS *eks.Client
	// ARCZonalShift reads the cluster's zonal shifts (ENABLE_ZONAL_SHIFT).
	ARCZonalShift *arczonalshift.Client
}

// Region is the region the clients call.
func (c *Clients) Region() string { return c.EC2.Options().Region }

// pricingRegion is where the Pricing API is served for a region's partition.
func pricingRegion(region string) string {
	switch {
	case len(region) >= 3 && region[:3] == "cn-":
		return "cn-northwest-1"
	case len(region) >= 3 && region[:3] == "ap-":
		return "ap-south-1"
	case len(region) >= 3 && region[:3] == "eu-":
		return "eu-central-1"
	}
	return "us-east-1"
}

// NewClients returns clients for the configuration. The Pricing client calls the region that
// serves prices for cfg's partition.
func NewClients(cfg aws.Config) *Clients {
	return &Clients{
		EC2: ec2.NewFromConfig(cfg),
		SSM: ssm.NewFromConfig(cfg),
		IAM: iam.NewFromConfig(cfg),
		SQS: sqs.NewFromConfig(cfg),
		Pricing: pricing.NewFromConfig(cfg, func(o *pricing.Options) {
			if cfg.BaseEndpoint == nil {
				o.Region = pricingRegion(cfg.Region)
			}
		}),
		EKS:           eks.NewFromConfig(cfg),
		ARCZonalShift: arczonalshift.NewFromConfig(cfg),
	}
}

// MaxAttempts is how many times a throttled or failed AWS call is tried.
const MaxAttempts = 8

// NewRetryer retries throttling (RequestLimitExceeded, Throttling, …), transient errors and
// timeouts up to MaxAttempts times with exponential backoff and jitter capped at maxBackoff.
func NewRetryer(maxBackoff time.Duration) aws.Retryer {
	return retry.NewStandard(func(o *retry.StandardOptions) {
		o.MaxAttempts = MaxAttempts
		o.MaxBackoff = maxBackoff
		o.Backoff = retry.NewExponentialJitterBackoff(maxBackoff)
	})
}

// LoadConfig reads the AWS configuration the SDK's default chain finds (environment, IRSA or
// Pod Identity web identity, instance metadata) with the provider's retryer. The region must
// be set (AWS_REGION) or discoverable from instance metadata.
func LoadConfig(ctx context.Context) (aws.Config, error) {
	cfg, err := config.LoadDefaultConfig(ctx, config.WithRetryer(func() aws.Retryer { return NewRetryer(20 * time.Second) }))
	if err != nil {
		return aws.Config{}, fmt.Errorf("loading AWS configuration: %w", err)
	}
	if cfg.Region == "" {
		return aws.Config{}, errors.New("no AWS region: set AWS_REGION")
	}
	return cfg, nil
}

// errorCode is the AWS error code of err, or "".
func errorCode(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}

// isNotFound reports AWS's not-found errors for the calls the provider makes.
func isNotFound(err error) bool {
	switch errorCode(err) {
	case "NoSuchEntity", "ParameterNotFound", "InvalidInstanceID.NotFound", "InvalidLaunchTemplateName.NotFoundException",
		"InvalidLaunchTemplateId.NotFound", "InvalidAMIID.NotFound", "InvalidSubnetID.NotFound", "InvalidGroup.NotFound",
		"InvalidCapacityReservationId.NotFound", "ResourceNotFoundException":
		return true
	}
	return false
}
