package kops

import (
	"encoding/base32"
	"hash/fnv"
	"strings"
)

// maxIAMNameLength is the longest IAM role (and instance profile) name.
const maxIAMNameLength = 64

// truncateName shortens names longer than maxLength as kOps does: the first characters, a dash
// and six characters of a hash of the whole name, so that different long names stay different.
func truncateName(name string, maxLength int) string {
	if len(name) <= maxLength {
		return name
	}
	const hashLength = 6
	h := fnv.New32a()
	_, _ = h.Write([]byte(name))
	hash := strings.ToLower(base32.HexEncoding.EncodeToString(h.Sum(nil)))[:hashLength]
	return name[:maxLength-hashLength-1] + "-" + hash
}

// nodesName is the name kOps gives the node IAM role, instance profile and security group.
func nodesName(cluster string) string { return "nodes." + cluster }
