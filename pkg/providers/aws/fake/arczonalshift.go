package fake

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// ZonalShift is an Amazon Application Recovery Controller (ARC) zonal shift of a seeded
// cluster: traffic moved away from one zone, until it expires or is cancelled.
type ZonalShift struct {
	// AwayFrom is the zone ID shifted away from, such as usw2-az1.
	AwayFrom string
	// Expiry is when the shift ends on its own.
	Expiry time.Time
	// NotApplied reports the shift as ARC's NOT_APPLIED (another shift of the resource takes
	// precedence): only applied shifts move traffic.
	NotApplied bool
}

// RegisterZonalShift makes the seeded cluster a resource ARC zonal shift manages (its EKS
// zonalShiftConfig enabled): GetManagedResource answers for its ARN. Without it ARC answers
// ResourceNotFoundException, as for a cluster with zonal shift off.
func (a *AWS) RegisterZonalShift(cluster string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.zonalShifts == nil {
		a.zonalShifts = map[string][]ZonalShift{}
	}
	if _, ok := a.zonalShifts[a.clusterARN(cluster)]; !ok {
		a.zonalShifts[a.clusterARN(cluster)] = []ZonalShift{}
	}
}

// StartZonalShift starts a zonal shift of the registered cluster away from a zone ID.
func (a *AWS) StartZonalShift(cluster string, s ZonalShift) {
	a.mu.Lock()
	defer a.mu.Unlock()
	arn := a.clusterARN(cluster)
	a.zonalShifts[arn] = append(a.zonalShifts[arn], s)
}

// CancelZonalShifts ends every zonal shift of the registered cluster.
func (a *AWS) CancelZonalShifts(cluster string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.zonalShifts[a.clusterARN(cluster)] = []ZonalShift{}
}

// clusterARN is the ARN of an EKS cluster of the fake's account and region.
func (a *AWS) clusterARN(name string) string {
	return fmt.Sprintf("arn:aws:eks:%s:%s:cluster/%s", a.opts.Region, a.opts.AccountID, name)
}

// serveARCZonalShift answers GetManagedResource (GET /managedresources/{resourceIdentifier}),
// the one ARC zonal shift call the controller makes, with the resource's active zonal shifts
// (ARC forgets expired ones).
func (a *AWS) serveARCZonalShift(w http.ResponseWriter, r *http.Request) {
	fail := func(status int, code, message string) { a.restJSONError(w, status, code, message) }
	arn, err := url.PathUnescape(strings.TrimPrefix(r.URL.EscapedPath(), "/managedresources/"))
	if r.Method != http.MethodGet || err != nil || arn == "" {
		a.countCall("UnknownOperation")
		fail(http.StatusNotFound, "UnknownOperationException", fmt.Sprintf("the fake does not serve %s %s", r.Method, r.URL.Path))
		return
	}
	if a.countCall("GetManagedResource") {
		fail(http.StatusTooManyRequests, "ThrottlingException", "Rate exceeded")
		return
	}
	a.authorize(r, "arc-zonal-shift:GetManagedResource", "*", nil, nil, "arc-zonal-shift:ResourceIdentifier", arn)
	a.mu.Lock()
	shifts, ok := a.zonalShifts[arn]
	now := a.now()
	var active []map[string]any
	for i, s := range shifts {
		if !s.Expiry.After(now) {
			continue
		}
		status := "APPLIED"
		if s.NotApplied {
			status = "NOT_APPLIED"
		}
		active = append(active, map[string]any{
			"appliedStatus": status, "awayFrom": s.AwayFrom, "comment": "fake", "expiryTime": epoch(s.Expiry),
			"resourceIdentifier": arn, "startTime": epoch(now), "zonalShiftId": fmt.Sprintf("%08d-0000-0000-0000-000000000000", i),
		})
	}
	a.mu.Unlock()
	if !ok {
		fail(http.StatusNotFound, "ResourceNotFoundException", fmt.Sprintf("Resource %s is not registered with zonal shift", arn))
		return
	}
	name := arn[strings.LastIndex(arn, "/")+1:]
	a.restJSON(w, http.StatusOK, map[string]any{
		"arn": arn, "name": name, "appliedWeights": map[string]any{}, "autoshifts": []any{},
		"zonalShifts": append([]map[string]any{}, active...), "zonalAutoshiftStatus": "DISABLED",
	})
}
