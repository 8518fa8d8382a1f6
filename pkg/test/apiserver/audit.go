package apiserver

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"time"
)

// evictionAuditPolicy makes the API server log every call to the eviction subresource of pods,
// once it has answered, and nothing else.
const evictionAuditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived, ResponseStarted, Panic]
rules:
- level: Metadata
  resources:
  - group: ""
    resources: [pods/eviction]
- level: None
`

// Eviction is one call to a pod's eviction subresource, as the API server's audit log records it.
type Eviction struct {
	// Namespace and Name name the pod.
	Namespace, Name string
	// Code is the HTTP status the server answered: 201 evicted, 429 refused by a
	// PodDisruptionBudget, 404 no such pod.
	Code int
	// Time is when the server answered.
	Time time.Time
	// User is who asked.
	User string
}

// Evicted reports whether the server carried out the eviction.
func (e Eviction) Evicted() bool { return e.Code >= 200 && e.Code < 300 }

// auditEvent is the part of an audit.k8s.io/v1 Event that Evictions reads.
type auditEvent struct {
	Verb      string `json:"verb"`
	ObjectRef *struct {
		Resource, Subresource, Namespace, Name string
	} `json:"objectRef"`
	ResponseStatus *struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
	StageTimestamp time.Time `json:"stageTimestamp"`
	User           struct {
		Username string `json:"username"`
	} `json:"user"`
}

// Evictions returns every eviction the API server has answered since it started, in the order
// it answered them, read from its audit log.
func (e *Env) Evictions() ([]Eviction, error) {
	f, err := os.Open(e.auditLog)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	var out []Eviction
	scanner := bufio.NewScanner(f)
	scanner.Buffer(make([]byte, 0, 64<<10), 4<<20)
	for line := 1; scanner.Scan(); line++ {
		var ev auditEvent
		if err := json.Unmarshal(scanner.Bytes(), &ev); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", e.auditLog, line, err)
		}
		ref := ev.ObjectRef
		if ref == nil || ref.Resource != "pods" || ref.Subresource != "eviction" || ev.Verb != "create" || ev.ResponseStatus == nil {
			continue
		}
		out = append(out, Eviction{Namespace: ref.Namespace, Name: ref.Name, Code: ev.ResponseStatus.Code, Time: ev.StageTimestamp, User: ev.User.Username})
	}
	return out, scanner.Err()
}
