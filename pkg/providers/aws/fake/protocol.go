package fake

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

const (
	ec2Version   = "2016-11-15"
	iamVersion   = "2010-05-08"
	ec2Namespace = "http://ec2.amazonaws.com/doc/2016-11-15/"
	iamNamespace = "https://iam.amazonaws.com/doc/2010-05-08/"
)

// apiError is an error answered to the client: an HTTP status, the service's error code and a
// message.
type apiError struct {
	status  int
	code    string
	message string
}

func (e *apiError) Error() string { return e.code + ": " + e.message }

func errf(status int, code, format string, args ...any) *apiError {
	return &apiError{status: status, code: code, message: fmt.Sprintf(format, args...)}
}

// badRequest is an HTTP 400 error.
func badRequest(code, format string, args ...any) *apiError {
	return errf(http.StatusBadRequest, code, format, args...)
}

// queryCall is one request of a query protocol (EC2 or IAM).
type queryCall struct {
	a       *AWS
	w       http.ResponseWriter
	r       *http.Request
	form    url.Values
	action  string
	service string // ec2 or iam
}

func (q *queryCall) get(key string) string { return q.form.Get(key) }

func (q *queryCall) has(key string) bool { _, ok := q.form[key]; return ok }

// list reads the flattened list prefix.1, prefix.2, ….
func (q *queryCall) list(prefix string) []string {
	var out []string
	for i := 1; ; i++ {
		k := prefix + "." + strconv.Itoa(i)
		if !q.has(k) {
			return out
		}
		out = append(out, q.get(k))
	}
}

// count is the number of elements of the flattened list of structures prefix.N.….
func (q *queryCall) count(prefix string) int {
	n := 0
	for {
		p := prefix + "." + strconv.Itoa(n+1) + "."
		found := false
		for k := range q.form {
			if strings.HasPrefix(k, p) {
				found = true
				break
			}
		}
		if !found {
			return n
		}
		n++
	}
}

func (q *queryCall) int32(key string) (*int32, error) {
	if !q.has(key) {
		return nil, nil
	}
	v, err := strconv.ParseInt(q.get(key), 10, 32)
	if err != nil {
		return nil, badRequest("InvalidParameterValue", "Value (%s) for parameter %s is invalid. Expected an integer.", q.get(key), key)
	}
	i := int32(v)
	return &i, nil
}

func (q *queryCall) bool(key string) (*bool, error) {
	if !q.has(key) {
		return nil, nil
	}
	v, err := strconv.ParseBool(q.get(key))
	if err != nil {
		return nil, badRequest("InvalidParameterValue", "Value (%s) for parameter %s is invalid. Expected a boolean.", q.get(key), key)
	}
	return &v, nil
}

func (q *queryCall) float(key string) (*float64, error) {
	if !q.has(key) {
		return nil, nil
	}
	v, err := strconv.ParseFloat(q.get(key), 64)
	if err != nil {
		return nil, badRequest("InvalidParameterValue", "Value (%s) for parameter %s is invalid. Expected a number.", q.get(key), key)
	}
	return &v, nil
}

// filter is an EC2 filter: a name and the values any of which may match.
type filter struct {
	name   string
	values []string
}

func (q *queryCall) filters() []filter {
	var out []filter
	for i := 1; q.has(fmt.Sprintf("Filter.%d.Name", i)); i++ {
		out = append(out, filter{name: q.get(fmt.Sprintf("Filter.%d.Name", i)), values: q.list(fmt.Sprintf("Filter.%d.Value", i))})
	}
	return out
}

// tags reads an EC2 tag list prefix.N.Key / prefix.N.Value.
func (q *queryCall) tags(prefix string) ([]tag, error) {
	var out []tag
	for i := 1; ; i++ {
		p := fmt.Sprintf("%s.%d.", prefix, i)
		if !q.has(p+"Key") && !q.has(p+"Value") {
			return out, nil
		}
		if !q.has(p + "Key") {
			return nil, badRequest("MissingParameter", "The request must contain the parameter %sKey", p)
		}
		out = append(out, tag{key: q.get(p + "Key"), value: q.get(p + "Value")})
	}
}

type tag struct{ key, value string }

// TagSpecification is the tags to give to one resource type, as EC2's TagSpecifications.
type TagSpecification struct {
	// ResourceType is instance, volume, launch-template, fleet, network-interface, ….
	ResourceType string
	// Tags are the tags.
	Tags map[string]string
}

// tagSpecs reads prefix.N.ResourceType and prefix.N.Tag.M.Key/Value.
func (q *queryCall) tagSpecs(prefix string) ([]TagSpecification, error) {
	var out []TagSpecification
	for i, n := 1, q.count(prefix); i <= n; i++ {
		p := fmt.Sprintf("%s.%d.", prefix, i)
		tags, err := q.tags(p + "Tag")
		if err != nil {
			return nil, err
		}
		m, err := tagMap(tags)
		if err != nil {
			return nil, err
		}
		out = append(out, TagSpecification{ResourceType: q.get(p + "ResourceType"), Tags: m})
	}
	return out, nil
}

// tagMap validates tags as EC2 does (no reserved aws: prefix, sizes) and returns them as a map.
func tagMap(tags []tag) (map[string]string, error) {
	m := map[string]string{}
	for _, t := range tags {
		if err := validateTag(t.key, t.value); err != nil {
			return nil, err
		}
		m[t.key] = t.value
	}
	if len(m) > 50 {
		return nil, badRequest("TagLimitExceeded", "The maximum number of tags per resource is 50.")
	}
	return m, nil
}

func validateTag(key, value string) error {
	switch {
	case key == "":
		return badRequest("InvalidParameterValue", "Tag key cannot be empty.")
	case strings.HasPrefix(strings.ToLower(key), "aws:"):
		return badRequest("InvalidParameterValue", "Tag keys starting with 'aws:' are reserved for internal use")
	case len(key) > 128:
		return badRequest("InvalidParameterValue", "Tag key exceeds the maximum length of 128 characters")
	case len(value) > 256:
		return badRequest("InvalidParameterValue", "Tag value exceeds the maximum length of 256 characters")
	}
	return nil
}

// respond writes a successful query response. For EC2 it is
// <ActionResponse xmlns=…><requestId>…</requestId>body</ActionResponse>; for IAM it is
// <ActionResponse xmlns=…><ActionResult>body</ActionResult><ResponseMetadata>…</ActionResponse>.
// body is a struct whose fields carry xml tags; nil writes no body.
func (q *queryCall) respond(body any) {
	inner := ""
	if body != nil {
		b, err := xml.Marshal(struct {
			XMLName xml.Name `xml:"x"`
			Body    any      `xml:"b"`
		}{Body: body})
		if err != nil {
			q.fail(http.StatusInternalServerError, "InternalError", err.Error())
			return
		}
		inner = innerXML([]byte(innerXML(b)))
	}
	id := q.a.requestID()
	var buf bytes.Buffer
	buf.WriteString(xml.Header)
	if q.service == "iam" {
		fmt.Fprintf(&buf, "<%sResponse xmlns=%q>", q.action, iamNamespace)
		if body != nil {
			fmt.Fprintf(&buf, "<%sResult>%s</%sResult>", q.action, inner, q.action)
		}
		fmt.Fprintf(&buf, "<ResponseMetadata><RequestId>%s</RequestId></ResponseMetadata></%sResponse>", id, q.action)
	} else {
		fmt.Fprintf(&buf, "<%sResponse xmlns=%q><requestId>%s</requestId>%s</%sResponse>", q.action, ec2Namespace, id, inner, q.action)
	}
	q.w.Header().Set("Content-Type", "text/xml;charset=UTF-8")
	q.w.WriteHeader(http.StatusOK)
	_, _ = q.w.Write(buf.Bytes())
}

// innerXML strips the outer element of a marshalled struct.
func innerXML(b []byte) string {
	start := bytes.IndexByte(b, '>')
	end := bytes.LastIndexByte(b, '<')
	if start < 0 || end <= start || b[start-1] == '/' {
		return ""
	}
	return string(b[start+1 : end])
}

// fail writes a query protocol error: EC2's <Response><Errors><Error>…</Errors><RequestID>, or
// IAM's <ErrorResponse><Error><Type>…</Error><RequestId>.
func (q *queryCall) fail(status int, code, message string) {
	id := q.a.requestID()
	var buf bytes.Buffer
	buf.WriteString(xml.Header)
	if q.service == "iam" {
		typ := "Sender"
		if status >= 500 {
			typ = "Receiver"
		}
		fmt.Fprintf(&buf, "<ErrorResponse xmlns=%q><Error><Type>%s</Type><Code>%s</Code><Message>%s</Message></Error><RequestId>%s</RequestId></ErrorResponse>",
			iamNamespace, typ, xmlEscape(code), xmlEscape(message), id)
	} else {
		fmt.Fprintf(&buf, "<Response><Errors><Error><Code>%s</Code><Message>%s</Message></Error></Errors><RequestID>%s</RequestID></Response>",
			xmlEscape(code), xmlEscape(message), id)
	}
	q.w.Header().Set("Content-Type", "text/xml;charset=UTF-8")
	q.w.WriteHeader(status)
	_, _ = q.w.Write(buf.Bytes())
}

func (q *queryCall) failErr(err error) {
	if ae, ok := err.(*apiError); ok {
		q.fail(ae.status, ae.code, ae.message)
		return
	}
	q.fail(http.StatusInternalServerError, "InternalError", err.Error())
}

func xmlEscape(s string) string {
	var b bytes.Buffer
	_ = xml.EscapeText(&b, []byte(s))
	return b.String()
}

// jsonCall is one request of a JSON protocol (SSM, SQS, Pricing).
type jsonCall struct {
	a       *AWS
	w       http.ResponseWriter
	r       *http.Request
	service string
	action  string
	body    []byte
}

// decode unmarshals the request body into v.
func (j *jsonCall) decode(v any) bool {
	if len(bytes.TrimSpace(j.body)) == 0 {
		return true
	}
	if err := json.Unmarshal(j.body, v); err != nil {
		j.fail(http.StatusBadRequest, "SerializationException", err.Error())
		return false
	}
	return true
}

func (j *jsonCall) contentType() string {
	if j.service == "sqs" {
		return "application/x-amz-json-1.0"
	}
	return "application/x-amz-json-1.1"
}

// respond writes v as the JSON response.
func (j *jsonCall) respond(v any) {
	b, err := json.Marshal(v)
	if err != nil {
		j.fail(http.StatusInternalServerError, "InternalServerError", err.Error())
		return
	}
	j.w.Header().Set("Content-Type", j.contentType())
	j.w.Header().Set("X-Amzn-RequestId", j.a.requestID())
	j.w.WriteHeader(http.StatusOK)
	_, _ = j.w.Write(b)
}

// fail writes a JSON protocol error: {"__type": "<namespace>#<code>", "message": …} and the
// X-Amzn-ErrorType header. For SQS, whose JSON protocol is query compatible, code may be
// "Shape;QueryCode": the body names the modelled shape and the x-amzn-query-error header
// carries the legacy query code the SDK reports, as SQS does.
func (j *jsonCall) fail(status int, code, message string) {
	shape, queryCode, _ := strings.Cut(code, ";")
	ns := map[string]string{"ssm": "com.amazonaws.ssm", "sqs": "com.amazonaws.sqs", "pricing": "com.amazonaws.pricing"}[j.service]
	typ := shape
	if ns != "" {
		typ = ns + "#" + shape
	}
	j.w.Header().Set("Content-Type", j.contentType())
	j.w.Header().Set("X-Amzn-RequestId", j.a.requestID())
	if j.service == "sqs" {
		if queryCode == "" {
			queryCode = shape
		}
		fault := "Sender"
		if status >= 500 {
			fault = "Receiver"
		}
		j.w.Header().Set("X-Amzn-Query-Error", queryCode+";"+fault)
	} else {
		j.w.Header().Set("X-Amzn-ErrorType", shape)
	}
	j.w.WriteHeader(status)
	b, _ := json.Marshal(map[string]string{"__type": typ, "message": message})
	_, _ = j.w.Write(b)
}

func (j *jsonCall) failErr(err error) {
	if ae, ok := err.(*apiError); ok {
		j.fail(ae.status, ae.code, ae.message)
		return
	}
	j.fail(http.StatusInternalServerError, "InternalServerError", err.Error())
}

// restJSON answers a REST-JSON call (EKS, ARC zonal shift): the body as JSON with status, or
// for an error status an error of that code (the X-Amzn-ErrorType header) and message.
func (a *AWS) restJSON(w http.ResponseWriter, status int, body any) {
	b, _ := json.Marshal(body)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Amzn-RequestId", a.requestID())
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// restJSONError answers a REST-JSON call with an error of code (such as
// ResourceNotFoundException) and message.
func (a *AWS) restJSONError(w http.ResponseWriter, status int, code, message string) {
	w.Header().Set("X-Amzn-ErrorType", code)
	a.restJSON(w, status, map[string]string{"message": message})
}

// epoch is a timestamp as the JSON protocols send them: seconds since the epoch.
func epoch(t time.Time) json.Number {
	return json.Number(strconv.FormatFloat(float64(t.UnixMilli())/1000, 'f', -1, 64))
}

// isoTime is a timestamp as the query protocols send them.
func isoTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

// wildcardMatch reports whether s matches pattern, in which * matches any run of characters
// and ? any one character, as EC2 filters allow.
func wildcardMatch(pattern, s string) bool {
	if !strings.ContainsAny(pattern, "*?") {
		return pattern == s
	}
	p, t := []rune(pattern), []rune(s)
	// dp over pattern positions reachable after consuming t[:i].
	cur := make([]bool, len(p)+1)
	cur[0] = true
	for k := 0; k < len(p) && p[k] == '*'; k++ {
		cur[k+1] = true
	}
	for _, c := range t {
		next := make([]bool, len(p)+1)
		for k := 0; k < len(p); k++ {
			if !cur[k] {
				continue
			}
			switch p[k] {
			case '*':
				next[k] = true
			case '?':
				next[k+1] = true
			default:
				if p[k] == c {
					next[k+1] = true
				}
			}
		}
		for k := 0; k < len(p); k++ {
			if next[k] && p[k] == '*' {
				next[k+1] = true
			}
		}
		cur = next
	}
	return cur[len(p)]
}

// page returns the window [offset, offset+size) of n items and the next token ("" at the
// end). token is the request's NextToken (an offset), size ≤ 0 means everything.
func page(n int, token string, size int) (start, end int, next string, err error) {
	if token != "" {
		v, perr := strconv.Atoi(token)
		if perr != nil || v < 0 || v > n {
			return 0, 0, "", badRequest("InvalidPaginationToken", "Invalid pagination token %q", token)
		}
		start = v
	}
	if size <= 0 {
		size = math.MaxInt32
	}
	end = min(n, start+size)
	if end < n {
		next = strconv.Itoa(end)
	}
	return start, end, next, nil
}

// parseTime parses a query protocol timestamp.
func parseTime(s string) (time.Time, error) {
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05Z", "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("invalid time %q", s)
}
