package fake

import (
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"time"
)

// InstanceProfile is an IAM instance profile.
type InstanceProfile struct {
	// Name is InstanceProfileName.
	Name string
	// ID is InstanceProfileId, AIPA and 17 characters.
	ID string
	// Arn is arn:aws:iam::<account>:instance-profile<path><name>.
	Arn string
	// Path is the profile's path, / by default.
	Path string
	// CreateDate is when it was created.
	CreateDate time.Time
	// Roles are the roles in it (at most one).
	Roles []Role
	// Tags are its tags.
	Tags map[string]string
}

// Role is an IAM role.
type Role struct {
	// Name is RoleName.
	Name string
	// ID is RoleId, AROA and 17 characters.
	ID string
	// Arn is arn:aws:iam::<account>:role<path><name>.
	Arn string
	// Path is the role's path.
	Path string
	// CreateDate is when it was created.
	CreateDate time.Time
}

func (p *InstanceProfile) clone() InstanceProfile {
	c := *p
	c.Roles = slices.Clone(p.Roles)
	c.Tags = cloneTags(p.Tags)
	return c
}

// AddRole seeds an IAM role with path /.
func (a *AWS) AddRole(name string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.roles[name] = &Role{Name: name, ID: a.upperIDLocked("AROA", 17), Arn: fmt.Sprintf("arn:aws:iam::%s:role/%s", a.opts.AccountID, name), Path: "/", CreateDate: a.now()}
}

// AddInstanceProfile seeds an instance profile with path /, holding the role when it is
// given (the role is created if needed).
func (a *AWS) AddInstanceProfile(name, role string) {
	if role != "" {
		a.mu.Lock()
		_, ok := a.roles[role]
		a.mu.Unlock()
		if !ok {
			a.AddRole(role)
		}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	p := a.newProfileLocked(name, "/", nil)
	if role != "" {
		p.Roles = []Role{*a.roles[role]}
	}
}

func (a *AWS) newProfileLocked(name, path string, tags map[string]string) *InstanceProfile {
	p := &InstanceProfile{Name: name, ID: a.upperIDLocked("AIPA", 17), Path: path, CreateDate: a.now(), Tags: tags,
		Arn: fmt.Sprintf("arn:aws:iam::%s:instance-profile%s%s", a.opts.AccountID, path, name)}
	a.profiles = append(a.profiles, p)
	return p
}

// InstanceProfiles returns the instance profiles, in creation order.
func (a *AWS) InstanceProfiles() []InstanceProfile {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make([]InstanceProfile, len(a.profiles))
	for i, p := range a.profiles {
		out[i] = p.clone()
	}
	return out
}

func (a *AWS) profile(name string) *InstanceProfile {
	for _, p := range a.profiles {
		if p.Name == name {
			return p
		}
	}
	return nil
}

// profileByRef finds a profile by name or ARN.
func (a *AWS) profileByRef(ref string) *InstanceProfile {
	if ref == "" {
		return nil
	}
	if strings.HasPrefix(ref, "arn:") {
		for _, p := range a.profiles {
			if p.Arn == ref {
				return p
			}
		}
		return nil
	}
	return a.profile(ref)
}

var (
	iamNamePattern = regexp.MustCompile(`^[\w+=,.@-]{1,128}$`)
	iamPathPattern = regexp.MustCompile(`^(/|/[\x21-\x7e]*/)$`)
)

type xmlRole struct {
	Path       string `xml:"Path"`
	RoleName   string `xml:"RoleName"`
	RoleID     string `xml:"RoleId"`
	Arn        string `xml:"Arn"`
	CreateDate string `xml:"CreateDate"`
}

type xmlIAMTag struct {
	Key   string `xml:"Key"`
	Value string `xml:"Value"`
}

type xmlInstanceProfile struct {
	Path                string      `xml:"Path"`
	InstanceProfileName string      `xml:"InstanceProfileName"`
	InstanceProfileID   string      `xml:"InstanceProfileId"`
	Arn                 string      `xml:"Arn"`
	CreateDate          string      `xml:"CreateDate"`
	Roles               []xmlRole   `xml:"Roles>member"`
	Tags                []xmlIAMTag `xml:"Tags>member,omitempty"`
}

func xmlRoleOf(r Role) xmlRole {
	return xmlRole{Path: r.Path, RoleName: r.Name, RoleID: r.ID, Arn: r.Arn, CreateDate: isoTime(r.CreateDate)}
}

func xmlProfile(p *InstanceProfile) xmlInstanceProfile {
	x := xmlInstanceProfile{Path: p.Path, InstanceProfileName: p.Name, InstanceProfileID: p.ID, Arn: p.Arn, CreateDate: isoTime(p.CreateDate), Roles: []xmlRole{}}
	for _, r := range p.Roles {
		x.Roles = append(x.Roles, xmlRoleOf(r))
	}
	for _, t := range xmlTags(p.Tags) {
		x.Tags = append(x.Tags, xmlIAMTag(t))
	}
	return x
}

func (a *AWS) serveIAM(q *queryCall) {
	q.service = "iam"
	if a.countCall(q.action) {
		q.fail(http.StatusBadRequest, "Throttling", "Rate exceeded")
		return
	}
	var body any
	var err error
	a.mu.Lock()
	switch q.action {
	case "GetInstanceProfile":
		body, err = a.getInstanceProfile(q)
	case "CreateInstanceProfile":
		body, err = a.createInstanceProfile(q)
	case "DeleteInstanceProfile":
		body, err = a.deleteInstanceProfile(q)
	case "AddRoleToInstanceProfile":
		body, err = a.addRoleToInstanceProfile(q)
	case "RemoveRoleFromInstanceProfile":
		body, err = a.removeRoleFromInstanceProfile(q)
	case "TagInstanceProfile":
		body, err = a.tagInstanceProfile(q)
	case "ListInstanceProfiles":
		body, err = a.listInstanceProfiles(q)
	case "GetRole":
		body, err = a.getRole(q)
	default:
		err = badRequest("InvalidAction", "Could not find operation %s for version %s", q.action, iamVersion)
	}
	a.mu.Unlock()
	if err != nil {
		q.failErr(err)
		return
	}
	q.respond(body)
}

func iamRequired(q *queryCall, name, param string) (string, error) {
	v := q.get(name)
	if v == "" {
		return "", badRequest("ValidationError", "1 validation error detected: Value null at '%s' failed to satisfy constraint: Member must not be null", param)
	}
	if !iamNamePattern.MatchString(v) {
		return "", badRequest("ValidationError", "1 validation error detected: Value '%s' at '%s' failed to satisfy constraint: Member must satisfy regular expression pattern: [\\w+=,.@-]+", v, param)
	}
	return v, nil
}

// profileOrErr finds the instance profile the request names, recording the request's
// permission check on it (with the request's tags, if any, and the profile's).
func (a *AWS) profileOrErr(q *queryCall, requestTags map[string]string) (*InstanceProfile, error) {
	name, err := iamRequired(q, "InstanceProfileName", "instanceProfileName")
	if err != nil {
		return nil, err
	}
	p := a.profile(name)
	if p == nil {
		a.authorizeLocked(q.r, "iam:"+q.action, a.iamARN("instance-profile", "/"+name), requestTags, nil)
		return nil, errf(http.StatusNotFound, "NoSuchEntity", "Instance Profile %s cannot be found.", name)
	}
	a.authorizeLocked(q.r, "iam:"+q.action, p.Arn, requestTags, p.Tags)
	return p, nil
}

func (a *AWS) getInstanceProfile(q *queryCall) (any, error) {
	p, err := a.profileOrErr(q, nil)
	if err != nil {
		return nil, err
	}
	return struct {
		InstanceProfile xmlInstanceProfile `xml:"InstanceProfile"`
	}{xmlProfile(p)}, nil
}

// iamTags reads Tags.member.N.Key/Value.
func iamTags(q *queryCall) (map[string]string, error) {
	tags := map[string]string{}
	for i := 1; q.has(fmt.Sprintf("Tags.member.%d.Key", i)); i++ {
		k, v := q.get(fmt.Sprintf("Tags.member.%d.Key", i)), q.get(fmt.Sprintf("Tags.member.%d.Value", i))
		if strings.HasPrefix(strings.ToLower(k), "aws:") {
			return nil, badRequest("InvalidInput", "User is not authorized to perform tag operations on reserved tag keys: the 'aws:' prefix is reserved for AWS use")
		}
		if k == "" || len(k) > 128 || len(v) > 256 {
			return nil, badRequest("ValidationError", "Invalid tag key or value")
		}
		tags[k] = v
	}
	if len(tags) > 50 {
		return nil, errf(http.StatusConflict, "LimitExceeded", "Cannot exceed quota for TagsPerInstanceProfile: 50")
	}
	return tags, nil
}

func (a *AWS) createInstanceProfile(q *queryCall) (any, error) {
	name, err := iamRequired(q, "InstanceProfileName", "instanceProfileName")
	if err != nil {
		return nil, err
	}
	path := q.get("Path")
	if path == "" {
		path = "/"
	}
	if !iamPathPattern.MatchString(path) || len(path) > 512 {
		return nil, badRequest("ValidationError", "The specified value for path is invalid. It must begin and end with / and contain only alphanumeric characters and/or / characters.")
	}
	tags, err := iamTags(q)
	if err != nil {
		return nil, err
	}
	if len(tags) == 0 {
		tags = nil
	}
	a.authorizeLocked(q.r, "iam:CreateInstanceProfile", a.iamARN("instance-profile", path+name), tags, nil)
	if a.profile(name) != nil {
		return nil, errf(http.StatusConflict, "EntityAlreadyExists", "Instance Profile %s already exists.", name)
	}
	p := a.newProfileLocked(name, path, tags)
	return struct {
		InstanceProfile xmlInstanceProfile `xml:"InstanceProfile"`
	}{xmlProfile(p)}, nil
}

func (a *AWS) deleteInstanceProfile(q *queryCall) (any, error) {
	p, err := a.profileOrErr(q, nil)
	if err != nil {
		return nil, err
	}
	if len(p.Roles) > 0 {
		return nil, errf(http.StatusConflict, "DeleteConflict", "Cannot delete entity, must remove roles from instance profile first.")
	}
	a.profiles = slices.DeleteFunc(a.profiles, func(x *InstanceProfile) bool { return x == p })
	return nil, nil
}

func (a *AWS) addRoleToInstanceProfile(q *queryCall) (any, error) {
	p, err := a.profileOrErr(q, nil)
	if err != nil {
		return nil, err
	}
	roleName, err := iamRequired(q, "RoleName", "roleName")
	if err != nil {
		return nil, err
	}
	r, ok := a.roles[roleName]
	if !ok {
		return nil, errf(http.StatusNotFound, "NoSuchEntity", "The role with name %s cannot be found.", roleName)
	}
	if len(p.Roles) > 0 {
		return nil, errf(http.StatusConflict, "LimitExceeded", "Cannot exceed quota for InstanceSessionsPerInstanceProfile: 1")
	}
	p.Roles = []Role{*r}
	return nil, nil
}

func (a *AWS) removeRoleFromInstanceProfile(q *queryCall) (any, error) {
	p, err := a.profileOrErr(q, nil)
	if err != nil {
		return nil, err
	}
	roleName, err := iamRequired(q, "RoleName", "roleName")
	if err != nil {
		return nil, err
	}
	if _, ok := a.roles[roleName]; !ok {
		return nil, errf(http.StatusNotFound, "NoSuchEntity", "The role with name %s cannot be found.", roleName)
	}
	i := slices.IndexFunc(p.Roles, func(r Role) bool { return r.Name == roleName })
	if i < 0 {
		return nil, errf(http.StatusNotFound, "NoSuchEntity", "The role with name %s is not in the instance profile %s.", roleName, p.Name)
	}
	p.Roles = slices.Delete(p.Roles, i, i+1)
	return nil, nil
}

func (a *AWS) tagInstanceProfile(q *queryCall) (any, error) {
	tags, err := iamTags(q)
	if err != nil {
		return nil, err
	}
	p, err := a.profileOrErr(q, tags)
	if err != nil {
		return nil, err
	}
	if len(tags) == 0 {
		return nil, badRequest("ValidationError", "1 validation error detected: Value null at 'tags' failed to satisfy constraint: Member must not be null")
	}
	merged := cloneTags(p.Tags)
	if merged == nil {
		merged = map[string]string{}
	}
	for k, v := range tags {
		merged[k] = v
	}
	if len(merged) > 50 {
		return nil, errf(http.StatusConflict, "LimitExceeded", "Cannot exceed quota for TagsPerInstanceProfile: 50")
	}
	p.Tags = merged
	return nil, nil
}

func (a *AWS) listInstanceProfiles(q *queryCall) (any, error) {
	prefix := q.get("PathPrefix")
	if prefix == "" {
		prefix = "/"
	}
	maxItems := 100
	if mi, err := q.int32("MaxItems"); err != nil {
		return nil, err
	} else if mi != nil {
		if *mi < 1 || *mi > 1000 {
			return nil, badRequest("ValidationError", "1 validation error detected: Value '%d' at 'maxItems' failed to satisfy constraint: Member must have value between 1 and 1000", *mi)
		}
		maxItems = int(*mi)
	}
	a.authorizeLocked(q.r, "iam:ListInstanceProfiles", a.iamARN("instance-profile", prefix), nil, nil)
	var matched []xmlInstanceProfile
	for _, p := range a.profiles {
		if strings.HasPrefix(p.Path, prefix) {
			matched = append(matched, xmlProfile(p))
		}
	}
	start, end, next, err := page(len(matched), q.get("Marker"), maxItems)
	if err != nil {
		return nil, badRequest("ValidationError", "Invalid Marker")
	}
	return struct {
		InstanceProfiles []xmlInstanceProfile `xml:"InstanceProfiles>member"`
		IsTruncated      bool                 `xml:"IsTruncated"`
		Marker           string               `xml:"Marker,omitempty"`
	}{matched[start:end], next != "", next}, nil
}

func (a *AWS) getRole(q *queryCall) (any, error) {
	name, err := iamRequired(q, "RoleName", "roleName")
	if err != nil {
		return nil, err
	}
	a.authorizeLocked(q.r, "iam:GetRole", a.iamARN("role", "/"+name), nil, nil)
	r, ok := a.roles[name]
	if !ok {
		return nil, errf(http.StatusNotFound, "NoSuchEntity", "The role with name %s cannot be found.", name)
	}
	return struct {
		Role xmlRole `xml:"Role"`
	}{xmlRoleOf(*r)}, nil
}
