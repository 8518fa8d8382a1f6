package fake

import (
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"k8s.io/utils/clock"

	"github.com/openkarpenter/karpenter/pkg/cloudprovider/catalog"
)

// Options configure the fake. Zero values take the defaults documented on each field.
type Options struct {
	// Region is the region the fake serves; default "us-west-2".
	Region string
	// AccountID is the caller's account; default "111122223333".
	AccountID string
	// Zones are the region's availability zones; default Region+"a", "b", "c". Their zone IDs
	// are the region's short name and "-az1", "-az2", … in this order (usw2-az1, …).
	Zones []string
	// Clock is the fake's time (k8s.io/utils/clock); default the real clock. Tests may pass a
	// k8s.io/utils/clock/testing.FakeClock.
	Clock clock.Clock
	// Catalog is the instance types DescribeInstanceTypes answers; default catalog.Load().
	Catalog []catalog.Entry
	// TerminatedRetention is how long terminated instances stay visible to DescribeInstances;
	// default one hour of Clock.
	TerminatedRetention time.Duration
	// VisibilityTimeout is the SQS queues' default visibility timeout; default 30 seconds.
	VisibilityTimeout time.Duration
}

// AWS is the fake. Create it with New and Close it when done.
type AWS struct {
	opts   Options
	server *httptest.Server
	clock  clock.Clock

	mu    sync.Mutex
	rng   *rand.Rand
	calls map[string]int
	// throttles maps an action to the number of its next calls that fail with throttling.
	throttles map[string]int

	subnets        []*Subnet
	securityGroups []*SecurityGroup
	images         []*Image
	types          []catalog.Entry
	typeIndex      map[string]int
	removed        map[pool]bool // (type, zone) offerings removed
	ice            map[pool]bool // (type, zone, capacity type) pools out of capacity
	poolCapacity   map[pool]int  // instances the pools with a limit can still launch
	noSpotRole     bool          // the account lacks the Spot service-linked role and may not create it
	// processorFeatures are the ProcessorInfo.SupportedFeatures of instance types, which the
	// catalog does not hold (see SetProcessorFeatures).
	processorFeatures map[string][]string
	// nitroEnclaves are the instance types that support Nitro Enclaves, which the catalog
	// does not say either (see SetNitroEnclavesSupported).
	nitroEnclaves map[string]bool
	// strategies are the placement group strategies of instance types set by
	// SetPlacementStrategies; others have placementStrategiesLocked's defaults.
	strategies map[string][]string
	// placementGroups are the placement groups (see AddPlacementGroup).
	placementGroups []*PlacementGroup
	templates       []*LaunchTemplate
	// reservations are the capacity reservations (see AddCapacityReservation).
	reservations []*CapacityReservation
	fleets       []*FleetRequest
	fleetTokens  map[string]*fleetResult
	instances    []*Instance
	ipCounter    int
	parameters   map[string]*parameter
	profiles     []*InstanceProfile
	roles        map[string]*Role
	clusters     map[string]*Cluster
	// zonalShifts are ARC zonal shifts by managed resource ARN (RegisterZonalShift).
	zonalShifts map[string][]ZonalShift
	queues      map[string]*queue
	// msgNotify is closed (and replaced) whenever a queue gains a message, to wake long polls.
	msgNotify chan struct{}
	// authorizations are the permission checks of the requests served (see Authorizations).
	authorizations []Authorization
	// denied are the EC2 actions the caller is not allowed (see DenyEC2).
	denied map[string]bool
	// health are the status checks and scheduled events of instances, by ID (see
	// SetStatusCheck, ScheduleEvent).
	health map[string]*instanceHealth
}

type pool struct{ instanceType, zone, capacityType string }

// New starts a fake with the given options on a local httptest server.
func New(opts Options) *AWS {
	if opts.Region == "" {
		opts.Region = "us-west-2"
	}
	if opts.AccountID == "" {
		opts.AccountID = "111122223333"
	}
	if len(opts.Zones) == 0 {
		opts.Zones = []string{opts.Region + "a", opts.Region + "b", opts.Region + "c"}
	} else {
		opts.Zones = append([]string(nil), opts.Zones...)
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.TerminatedRetention == 0 {
		opts.TerminatedRetention = time.Hour
	}
	if opts.VisibilityTimeout == 0 {
		opts.VisibilityTimeout = 30 * time.Second
	}
	if opts.Catalog == nil {
		entries, err := catalog.Load()
		if err != nil {
			panic(fmt.Sprintf("fake aws: loading the catalog: %v", err))
		}
		opts.Catalog = entries
	}
	a := &AWS{
		opts:              opts,
		clock:             opts.Clock,
		rng:               rand.New(rand.NewPCG(1, 2)),
		calls:             map[string]int{},
		throttles:         map[string]int{},
		removed:           map[pool]bool{},
		processorFeatures: map[string][]string{},
		nitroEnclaves:     map[string]bool{},
		strategies:        map[string][]string{},
		ice:               map[pool]bool{},
		poolCapacity:      map[pool]int{},
		fleetTokens:       map[string]*fleetResult{},
		parameters:        map[string]*parameter{},
		roles:             map[string]*Role{},
		clusters:          map[string]*Cluster{},
		queues:            map[string]*queue{},
		msgNotify:         make(chan struct{}),
	}
	a.setTypes(opts.Catalog)
	a.server = httptest.NewServer(http.HandlerFunc(a.serveHTTP))
	return a
}

// Close shuts the server down.
func (a *AWS) Close() { a.server.Close() }

// URL is the server's base URL, such as http://127.0.0.1:40123.
func (a *AWS) URL() string { return a.server.URL }

// Region is the region the fake serves.
func (a *AWS) Region() string { return a.opts.Region }

// AccountID is the account the fake serves.
func (a *AWS) AccountID() string { return a.opts.AccountID }

// Zones are the region's availability zones.
func (a *AWS) Zones() []string { return append([]string(nil), a.opts.Zones...) }

// Config returns an aws.Config for the SDK's clients (ec2.NewFromConfig, ssm, sqs, iam,
// pricing, eks): the fake's region, static credentials, BaseEndpoint at the server, and the
// SDK's standard retryer with its usual attempts but backoffs of at most 10ms and no retry
// quota, so that retried throttles keep tests fast. Callers may replace any field.
func (a *AWS) Config() aws.Config {
	return aws.Config{
		Region:       a.opts.Region,
		Credentials:  credentials.NewStaticCredentialsProvider("AKIAFAKEFAKEFAKEFAKE", "fake-secret-key", ""),
		BaseEndpoint: aws.String(a.server.URL),
		HTTPClient:   a.server.Client(),
		Retryer: func() aws.Retryer {
			return retry.NewStandard(func(o *retry.StandardOptions) {
				o.MaxBackoff = 10 * time.Millisecond
				o.RateLimiter = ratelimit.None
			})
		},
	}
}

// Throttle makes the next n calls of action (such as "CreateFleet", "DescribeInstances",
// "GetParameter", "ReceiveMessage") fail with the service's throttling error: EC2's
// RequestLimitExceeded (HTTP 503), IAM's Throttling, SSM's and Pricing's ThrottlingException,
// SQS's RequestThrottled, EKS's ThrottlingException; the SDK's standard retryer retries all
// of them. n = 0 clears it.
func (a *AWS) Throttle(action string, n int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.throttles[action] = n
}

// Calls is the number of requests received for the action, throttled ones included.
func (a *AWS) Calls(action string) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.calls[action]
}

// countCall counts a request and reports whether it is to be throttled.
func (a *AWS) countCall(action string) (throttled bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.calls[action]++
	if a.throttles[action] > 0 {
		a.throttles[action]--
		return true
	}
	return false
}

func (a *AWS) now() time.Time { return a.clock.Now() }

// requestID returns a new request ID shaped like AWS's (a UUID).
func (a *AWS) requestID() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.uuidLocked()
}

func (a *AWS) uuidLocked() string {
	b := make([]byte, 16)
	for i := range b {
		b[i] = byte(a.rng.UintN(256))
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// hexIDLocked returns prefix followed by n random lower-case hex digits.
func (a *AWS) hexIDLocked(prefix string, n int) string {
	const digits = "0123456789abcdef"
	var sb strings.Builder
	sb.WriteString(prefix)
	for range n {
		sb.WriteByte(digits[a.rng.IntN(16)])
	}
	return sb.String()
}

// upperIDLocked returns prefix followed by n random upper-case letters and digits, as IAM's
// unique IDs are.
func (a *AWS) upperIDLocked(prefix string, n int) string {
	const chars = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	var sb strings.Builder
	sb.WriteString(prefix)
	for range n {
		sb.WriteByte(chars[a.rng.IntN(len(chars))])
	}
	return sb.String()
}

// serveHTTP routes a request to its service by the X-Amz-Target header (JSON protocols), the
// path (EKS) or the form's Version (EC2 and IAM query protocols).
func (a *AWS) serveHTTP(w http.ResponseWriter, r *http.Request) {
	if target := r.Header.Get("X-Amz-Target"); target != "" {
		service, action, _ := strings.Cut(target, ".")
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		j := &jsonCall{a: a, w: w, r: r, action: action, body: body}
		switch service {
		case "AmazonSSM":
			j.service = "ssm"
			a.serveSSM(j)
		case "AmazonSQS":
			j.service = "sqs"
			a.serveSQS(j)
		case "AWSPriceListService":
			j.service = "pricing"
			a.servePricing(j)
		default:
			j.service = "unknown"
			j.fail(http.StatusBadRequest, "UnknownOperationException", fmt.Sprintf("the fake does not serve %s", target))
		}
		return
	}
	if strings.HasPrefix(r.URL.Path, "/clusters") {
		a.serveEKS(w, r)
		return
	}
	if strings.HasPrefix(r.URL.Path, "/managedresources/") {
		a.serveARCZonalShift(w, r)
		return
	}
	if err := r.ParseForm(); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	q := &queryCall{a: a, w: w, r: r, form: r.PostForm, action: r.PostForm.Get("Action")}
	if len(q.form) == 0 {
		q.form = r.Form
		q.action = r.Form.Get("Action")
	}
	switch q.form.Get("Version") {
	case ec2Version:
		a.serveEC2(q)
	case iamVersion:
		a.serveIAM(q)
	default:
		q.service = "ec2"
		q.fail(http.StatusBadRequest, "InvalidAction", fmt.Sprintf("the fake does not serve API version %q", q.form.Get("Version")))
	}
}

// zoneID is the zone ID of a zone of the region: the region's short name (usw2) and the
// zone's position in Options.Zones; zones the region does not list get "-az" and their letter.
func (a *AWS) zoneID(zone string) string {
	for i, z := range a.opts.Zones {
		if z == zone {
			return fmt.Sprintf("%s-az%d", regionShortName(a.opts.Region), i+1)
		}
	}
	return regionShortName(a.opts.Region) + "-az" + strings.TrimPrefix(zone, a.opts.Region)
}

// regionShortName abbreviates a region as zone IDs do: us-west-2 → usw2, ap-southeast-1 →
// apse1.
func regionShortName(region string) string {
	parts := strings.Split(region, "-")
	if len(parts) != 3 {
		return strings.ReplaceAll(region, "-", "")
	}
	dir := map[string]string{"north": "n", "south": "s", "east": "e", "west": "w", "central": "c",
		"northeast": "ne", "southeast": "se", "northwest": "nw", "southwest": "sw"}[parts[1]]
	if dir == "" {
		dir = parts[1][:1]
	}
	return parts[0] + dir + parts[2]
}

// queueURL is the URL of a queue of the fake.
func (a *AWS) queueURL(name string) string {
	return a.server.URL + "/" + a.opts.AccountID + "/" + url.PathEscape(name)
}

func cloneTags(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
