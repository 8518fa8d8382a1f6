package fake

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"
)

// StatusCheckKind names one of the status checks EC2 runs on a running instance.
type StatusCheckKind string

// The status checks DescribeInstanceStatus reports.
const (
	// StatusCheckInstance is the instance status check: the instance's own virtual machine
	// (its operating system, network configuration, memory).
	StatusCheckInstance StatusCheckKind = "instance-status"
	// StatusCheckSystem is the system status check: the host the instance runs on (power,
	// network, hardware).
	StatusCheckSystem StatusCheckKind = "system-status"
	// StatusCheckAttachedEBS is the attached EBS status check: the instance's reachability of
	// its EBS volumes.
	StatusCheckAttachedEBS StatusCheckKind = "attached-ebs-status"
)

// StatusCheck is the result of a status check, as DescribeInstanceStatus reports it: a
// summary status and the detail of its one test, reachability.
type StatusCheck struct {
	// Status is the summary: ok, impaired, initializing or insufficient-data.
	Status string
	// Reachability is the test's result: passed, failed, initializing or insufficient-data;
	// default failed when Status is impaired, passed when it is ok, else Status.
	Reachability string
	// ImpairedSince is when the test began failing; default the fake's now when it fails.
	// Only a failing test reports it.
	ImpairedSince time.Time
}

// InstanceEvent is an event EC2 has scheduled for an instance.
type InstanceEvent struct {
	// ID is the event's ID, instance-event- and 17 hex digits; assigned when empty.
	ID string
	// Code is instance-reboot, system-reboot, system-maintenance, instance-retirement or
	// instance-stop.
	Code string
	// Description is the event's text; default a sentence saying what the code means.
	Description string
	// NotBefore is the earliest start of the event; default a week after the fake's now.
	// NotAfter (the latest end) and NotBeforeDeadline (the latest start the owner may move it
	// to) are omitted when zero.
	NotBefore, NotAfter, NotBeforeDeadline time.Time
}

// instanceHealth is what DescribeInstanceStatus reports of an instance besides its state.
type instanceHealth struct {
	checks map[StatusCheckKind]StatusCheck
	events []InstanceEvent
}

var (
	checkStatuses       = []string{"ok", "impaired", "initializing", "insufficient-data"}
	checkReachabilities = []string{"passed", "failed", "initializing", "insufficient-data"}
	eventDescriptions   = map[string]string{
		"instance-reboot":     "The instance is scheduled for a reboot",
		"system-reboot":       "The instance is scheduled for a system reboot",
		"system-maintenance":  "The instance is scheduled for system maintenance",
		"instance-retirement": "The instance is running on degraded hardware",
		"instance-stop":       "The instance is scheduled to be stopped",
	}
)

// SetStatusCheck sets the result of one of a running instance's status checks, as EC2 finds it
// (every check of a launched instance is ok until set): for example StatusCheck{Status:
// "impaired"} fails it from now, StatusCheck{Status: "ok"} heals it. It reports false when
// there is no such instance, and panics on a status or reachability EC2 does not have.
func (a *AWS) SetStatusCheck(instanceID string, kind StatusCheckKind, c StatusCheck) bool {
	if !slices.Contains([]StatusCheckKind{StatusCheckInstance, StatusCheckSystem, StatusCheckAttachedEBS}, kind) {
		panic(fmt.Sprintf("fake aws: no status check %q", kind))
	}
	if !slices.Contains(checkStatuses, c.Status) {
		panic(fmt.Sprintf("fake aws: status check status %q is none of %v", c.Status, checkStatuses))
	}
	if c.Reachability == "" {
		c.Reachability = map[string]string{"ok": "passed", "impaired": "failed"}[c.Status]
		if c.Reachability == "" {
			c.Reachability = c.Status
		}
	}
	if !slices.Contains(checkReachabilities, c.Reachability) {
		panic(fmt.Sprintf("fake aws: status check reachability %q is none of %v", c.Reachability, checkReachabilities))
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.instance(instanceID) == nil {
		return false
	}
	switch {
	case c.Reachability != "failed":
		c.ImpairedSince = time.Time{}
	case c.ImpairedSince.IsZero():
		c.ImpairedSince = a.now()
	}
	a.healthLocked(instanceID).checks[kind] = c
	return true
}

// ScheduleEvent schedules an event for an instance and returns its ID; it reports false when
// there is no such instance, and panics on a code EC2 does not have.
func (a *AWS) ScheduleEvent(instanceID string, e InstanceEvent) (string, bool) {
	if _, ok := eventDescriptions[e.Code]; !ok {
		panic(fmt.Sprintf("fake aws: no scheduled event code %q", e.Code))
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.instance(instanceID) == nil {
		return "", false
	}
	if e.ID == "" {
		e.ID = a.hexIDLocked("instance-event-", 17)
	}
	if e.Description == "" {
		e.Description = eventDescriptions[e.Code]
	}
	if e.NotBefore.IsZero() {
		e.NotBefore = a.now().Add(7 * 24 * time.Hour)
	}
	h := a.healthLocked(instanceID)
	h.events = append(h.events, e)
	return e.ID, true
}

// RemoveEvent removes a scheduled event of an instance, as EC2 stops listing one some time
// after it completed or was cancelled; it reports whether there was such an event.
func (a *AWS) RemoveEvent(instanceID, eventID string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	h := a.health[instanceID]
	if h == nil {
		return false
	}
	n := len(h.events)
	h.events = slices.DeleteFunc(h.events, func(e InstanceEvent) bool { return e.ID == eventID })
	return len(h.events) < n
}

// healthLocked returns the status checks and events of an instance, every check ok at first.
func (a *AWS) healthLocked(instanceID string) *instanceHealth {
	if a.health == nil {
		a.health = map[string]*instanceHealth{}
	}
	h := a.health[instanceID]
	if h == nil {
		h = &instanceHealth{checks: map[StatusCheckKind]StatusCheck{}}
		for _, k := range []StatusCheckKind{StatusCheckInstance, StatusCheckSystem, StatusCheckAttachedEBS} {
			h.checks[k] = StatusCheck{Status: "ok", Reachability: "passed"}
		}
		a.health[instanceID] = h
	}
	return h
}

type xmlStatusDetail struct {
	Name          string `xml:"name"`
	Status        string `xml:"status"`
	ImpairedSince string `xml:"impairedSince,omitempty"`
}

type xmlStatusSummary struct {
	Status  string            `xml:"status"`
	Details []xmlStatusDetail `xml:"details>item,omitempty"`
}

type xmlInstanceStatusEvent struct {
	InstanceEventID   string `xml:"instanceEventId"`
	Code              string `xml:"code"`
	Description       string `xml:"description"`
	NotBefore         string `xml:"notBefore,omitempty"`
	NotAfter          string `xml:"notAfter,omitempty"`
	NotBeforeDeadline string `xml:"notBeforeDeadline,omitempty"`
}

type xmlInstanceStatus struct {
	InstanceID         string                   `xml:"instanceId"`
	AvailabilityZone   string                   `xml:"availabilityZone"`
	AvailabilityZoneID string                   `xml:"availabilityZoneId"`
	State              xmlInstanceState         `xml:"instanceState"`
	SystemStatus       xmlStatusSummary         `xml:"systemStatus"`
	InstanceStatus     xmlStatusSummary         `xml:"instanceStatus"`
	AttachedEBSStatus  xmlStatusSummary         `xml:"attachedEbsStatus"`
	Events             []xmlInstanceStatusEvent `xml:"eventsSet>item,omitempty"`
}

// statusSummaryLocked is a status check of an instance as the response gives it: checks are
// run on running instances only, and are not-applicable otherwise.
func (a *AWS) statusSummaryLocked(inst *Instance, kind StatusCheckKind) xmlStatusSummary {
	if inst.State != "running" {
		return xmlStatusSummary{Status: "not-applicable"}
	}
	c := a.healthLocked(inst.ID).checks[kind]
	d := xmlStatusDetail{Name: "reachability", Status: c.Reachability}
	if !c.ImpairedSince.IsZero() {
		d.ImpairedSince = isoTime(c.ImpairedSince)
	}
	return xmlStatusSummary{Status: c.Status, Details: []xmlStatusDetail{d}}
}

// eventsLocked are the scheduled events of an instance; a terminated instance has none.
func (a *AWS) eventsLocked(inst *Instance) []InstanceEvent {
	if inst.State == "terminated" {
		return nil
	}
	return a.healthLocked(inst.ID).events
}

// optionalTime is a timestamp of a response, "" for none.
func optionalTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return isoTime(t)
}

// describeInstanceStatus serves DescribeInstanceStatus: the status checks and scheduled events
// of the instances asked for (default all), of running ones only unless IncludeAllInstances,
// that match every filter, a page at a time.
func (a *AWS) describeInstanceStatus(q *queryCall) (any, error) {
	ids := q.list("InstanceId")
	filters := q.filters()
	size, err := maxResults(q, 5, 1000)
	if err != nil {
		return nil, err
	}
	if size > 0 && len(ids) > 0 {
		return nil, badRequest("InvalidParameterCombination", "The parameter instancesSet cannot be used with the parameter maxResults")
	}
	includeAll, err := q.bool("IncludeAllInstances")
	if err != nil {
		return nil, err
	}
	dryRun, err := q.bool("DryRun")
	if err != nil {
		return nil, err
	}
	for _, f := range filters {
		if strings.HasPrefix(f.name, "tag:") || f.name == "tag-key" {
			return nil, badRequest("InvalidParameterValue", "The filter '%s' is invalid", f.name)
		}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	attr := func(inst *Instance) func(string) ([]string, bool) {
		return func(name string) ([]string, bool) {
			if inst == nil {
				inst = &Instance{}
			}
			events := func(field func(InstanceEvent) string) []string {
				if inst.ID == "" {
					return nil
				}
				var out []string
				for _, e := range a.eventsLocked(inst) {
					if v := field(e); v != "" {
						out = append(out, v)
					}
				}
				return out
			}
			check := func(kind StatusCheckKind, reachability bool) []string {
				if inst.ID == "" {
					return nil
				}
				s := a.statusSummaryLocked(inst, kind)
				if !reachability {
					return []string{s.Status}
				}
				var out []string
				for _, d := range s.Details {
					out = append(out, d.Status)
				}
				return out
			}
			switch name {
			case "availability-zone":
				return []string{inst.Zone}, true
			case "availability-zone-id":
				return []string{a.zoneID(inst.Zone)}, true
			case "instance-state-name":
				return []string{inst.State}, true
			case "instance-state-code":
				return []string{itoa(stateCodes[inst.State])}, true
			case "event.code":
				return events(func(e InstanceEvent) string { return e.Code }), true
			case "event.description":
				return events(func(e InstanceEvent) string { return e.Description }), true
			case "event.instance-event-id":
				return events(func(e InstanceEvent) string { return e.ID }), true
			case "event.not-before":
				return events(func(e InstanceEvent) string { return optionalTime(e.NotBefore) }), true
			case "event.not-after":
				return events(func(e InstanceEvent) string { return optionalTime(e.NotAfter) }), true
			case "event.not-before-deadline":
				return events(func(e InstanceEvent) string { return optionalTime(e.NotBeforeDeadline) }), true
			case "instance-status.status":
				return check(StatusCheckInstance, false), true
			case "instance-status.reachability":
				return check(StatusCheckInstance, true), true
			case "system-status.status":
				return check(StatusCheckSystem, false), true
			case "system-status.reachability":
				return check(StatusCheckSystem, true), true
			case "attached-ebs-status.status":
				return check(StatusCheckAttachedEBS, false), true
			}
			return nil, false
		}
	}
	if err := validateFilters(filters, attr(nil)); err != nil {
		return nil, err
	}
	if err := a.checkInstanceIDs(ids); err != nil {
		return nil, err
	}
	if dryRun != nil && *dryRun {
		return nil, errf(http.StatusPreconditionFailed, "DryRunOperation", "Request would have succeeded, but DryRun flag is set.")
	}
	var matched []*Instance
	for _, inst := range a.instances {
		if !a.visibleLocked(inst) || (len(ids) > 0 && !slices.Contains(ids, inst.ID)) {
			continue
		}
		if inst.State != "running" && (includeAll == nil || !*includeAll) {
			continue
		}
		if ok, err := matchFilters(filters, nil, attr(inst)); err != nil {
			return nil, err
		} else if ok {
			matched = append(matched, inst)
		}
	}
	start, end, next, err := page(len(matched), q.get("NextToken"), size)
	if err != nil {
		return nil, err
	}
	out := make([]xmlInstanceStatus, 0, end-start)
	for _, inst := range matched[start:end] {
		s := xmlInstanceStatus{InstanceID: inst.ID, AvailabilityZone: inst.Zone, AvailabilityZoneID: a.zoneID(inst.Zone),
			State:          xmlInstanceState{Code: stateCodes[inst.State], Name: inst.State},
			SystemStatus:   a.statusSummaryLocked(inst, StatusCheckSystem),
			InstanceStatus: a.statusSummaryLocked(inst, StatusCheckInstance), AttachedEBSStatus: a.statusSummaryLocked(inst, StatusCheckAttachedEBS)}
		for _, e := range a.eventsLocked(inst) {
			s.Events = append(s.Events, xmlInstanceStatusEvent{InstanceEventID: e.ID, Code: e.Code, Description: e.Description,
				NotBefore: optionalTime(e.NotBefore), NotAfter: optionalTime(e.NotAfter), NotBeforeDeadline: optionalTime(e.NotBeforeDeadline)})
		}
		out = append(out, s)
	}
	return struct {
		InstanceStatuses []xmlInstanceStatus `xml:"instanceStatusSet>item"`
		NextToken        string              `xml:"nextToken,omitempty"`
	}{out, next}, nil
}
