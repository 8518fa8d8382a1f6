package kops

import (
	"errors"
	"fmt"
	"strings"

	awsv1 "github.com/openkarpenter/karpenter/pkg/apis/aws/v1"
)

// imageFormDetail is kOps' validation message for an image in none of the supported forms.
const imageFormDetail = "must be ami-*, ssm:<parameter>, <name>, or <owner>/<name>"

var (
	errImageRequired        = errors.New("image is required")
	errSSMParameterRequired = errors.New("ssm image parameter is required")
)

// imageFormError is an image in none of the supported forms.
type imageFormError struct{ image string }

// Error is the generator's message for the image.
func (e imageFormError) Error() string { return fmt.Sprintf("image %q %s", e.image, imageFormDetail) }

// imageOwnerAliases are the owner names kOps accepts in <owner>/<name> images, with the AWS
// account each stands for.
var imageOwnerAliases = map[string]string{
	"amazon":     "137112412989",
	"amazon.com": "137112412989",
	"debian":     "136693071363",
	"debian11":   "136693071363",
	"flatcar":    "075585003325",
	"redhat":     "309956199498",
	"redhat.com": "309956199498",
	"ubuntu":     "099720109477",
	"rocky":      "792107900819",
	"rockylinux": "792107900819",
}

// ubuntuAccount owns Canonical's Ubuntu images, whose root device is /dev/sda1.
const ubuntuAccount = "099720109477"

// resolveImageOwner returns the account an owner alias stands for, or the owner unchanged.
func resolveImageOwner(owner string) string {
	if account, ok := imageOwnerAliases[owner]; ok {
		return account
	}
	return owner
}

// amiSelectorTerm translates a kOps image into the one AMI selector term kOps generates:
// ami-… selects by ID, ssm:<parameter> by SSM parameter, a bare name by name among the
// account's own images, and <owner>/<name> (split at the first "/") by owner and name.
func amiSelectorTerm(image string) (awsv1.AMISelectorTerm, error) {
	image = strings.TrimSpace(image)
	switch {
	case image == "":
		return awsv1.AMISelectorTerm{}, errImageRequired
	case strings.Contains(image, "://"):
		return awsv1.AMISelectorTerm{}, imageFormError{image}
	case strings.HasPrefix(image, "ami-"):
		return awsv1.AMISelectorTerm{ID: image}, nil
	case strings.HasPrefix(image, "ssm:"):
		parameter := strings.TrimPrefix(image, "ssm:")
		if parameter == "" {
			return awsv1.AMISelectorTerm{}, errSSMParameterRequired
		}
		return awsv1.AMISelectorTerm{SSMParameter: parameter}, nil
	}
	owner, name, found := strings.Cut(image, "/")
	if !found {
		return awsv1.AMISelectorTerm{Name: image, Owner: "self"}, nil
	}
	if owner == "" || name == "" {
		return awsv1.AMISelectorTerm{}, imageFormError{image}
	}
	return awsv1.AMISelectorTerm{Owner: resolveImageOwner(owner), Name: name}, nil
}
