package fake

import "net/http"

var errNotYet = badRequest("InvalidAction", "not implemented by the fake yet")

func (a *AWS) createLaunchTemplate(q *queryCall) (any, error)    { return nil, errNotYet }
func (a *AWS) describeLaunchTemplates(q *queryCall) (any, error) { return nil, errNotYet }
func (a *AWS) deleteLaunchTemplate(q *queryCall) (any, error)    { return nil, errNotYet }
func (a *AWS) createFleet(q *queryCall) (any, error)             { return nil, errNotYet }
func (a *AWS) describeInstances(q *queryCall) (any, error)       { return nil, errNotYet }
func (a *AWS) terminateInstances(q *queryCall) (any, error)      { return nil, errNotYet }
func (a *AWS) createTags(q *queryCall, del bool) (any, error)    { return nil, errNotYet }
func (a *AWS) serveIAM(q *queryCall)                             { q.service = "iam"; q.failErr(errNotYet) }
func (a *AWS) serveSQS(j *jsonCall)                              { j.failErr(errNotYet) }
func (a *AWS) servePricing(j *jsonCall)                          { j.failErr(errNotYet) }
func (a *AWS) serveEKS(w http.ResponseWriter, r *http.Request)   { http.Error(w, "no", 400) }

type fleetResult struct{}
type LaunchTemplate struct{}
type FleetRequest struct{}
type Instance struct{}
type InstanceProfile struct{}
type Role struct{}
type Cluster struct{}
type queue struct{}
