package fake

import "net/http"

var errNotYet = badRequest("InvalidAction", "not implemented by the fake yet")

func (a *AWS) serveSQS(j *jsonCall)                            { j.failErr(errNotYet) }
func (a *AWS) servePricing(j *jsonCall)                        { j.failErr(errNotYet) }
func (a *AWS) serveEKS(w http.ResponseWriter, r *http.Request) { http.Error(w, "no", 400) }

type Cluster struct{}
type queue struct{}
