package fake

import (
	"fmt"
	"net/http"
	"strings"
	"time"
)

type parameter struct {
	value    string
	version  int64
	modified time.Time
}

// PutParameter seeds (or overwrites, bumping its version) an SSM String parameter.
func (a *AWS) PutParameter(name, value string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	p, ok := a.parameters[name]
	if !ok {
		p = &parameter{}
		a.parameters[name] = p
	}
	p.value = value
	p.version++
	p.modified = a.now()
}

// DeleteParameter removes an SSM parameter.
func (a *AWS) DeleteParameter(name string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.parameters, name)
}

func (a *AWS) serveSSM(j *jsonCall) {
	if a.countCall(j.action) {
		j.fail(http.StatusBadRequest, "ThrottlingException", "Rate exceeded")
		return
	}
	switch j.action {
	case "GetParameter":
		a.getParameter(j)
	default:
		j.fail(http.StatusBadRequest, "UnknownOperationException", fmt.Sprintf("the fake does not serve AmazonSSM.%s", j.action))
	}
}

func (a *AWS) getParameter(j *jsonCall) {
	var in struct {
		Name           *string
		WithDecryption *bool
	}
	if !j.decode(&in) {
		return
	}
	if in.Name == nil || *in.Name == "" {
		j.fail(http.StatusBadRequest, "ValidationException", "1 validation error detected: Value null at 'name' failed to satisfy constraint: Member must not be null")
		return
	}
	name := *in.Name
	// A name may carry a version or label selector (name:3); the fake keeps only the latest.
	base, selector, _ := strings.Cut(strings.TrimPrefix(name, "arn:aws:ssm:"+a.opts.Region+":"+a.opts.AccountID+":parameter"), ":")
	a.mu.Lock()
	a.authorizeLocked(j.r, "ssm:GetParameter", a.ssmParameterARN(base), nil, nil)
	p, ok := a.parameters[base]
	var value string
	var version int64
	var modified time.Time
	if ok {
		value, version, modified = p.value, p.version, p.modified
	}
	a.mu.Unlock()
	if !ok || (selector != "" && selector != fmt.Sprint(version)) {
		j.fail(http.StatusBadRequest, "ParameterNotFound", fmt.Sprintf("Parameter %s not found.", name))
		return
	}
	arnName := base
	if !strings.HasPrefix(arnName, "/") {
		arnName = "/" + arnName
	}
	j.respond(map[string]any{"Parameter": map[string]any{
		"Name":             base,
		"Type":             "String",
		"Value":            value,
		"Version":          version,
		"ARN":              fmt.Sprintf("arn:aws:ssm:%s:%s:parameter%s", a.opts.Region, a.opts.AccountID, arnName),
		"LastModifiedDate": epoch(modified),
		"DataType":         "text",
	}})
}
