// Package fake owns an in-process fake of the AWS services the AWS cloud provider talks to: the
// "far end" of EC2, SSM, SQS, IAM, Pricing, EKS and ARC zonal shift.
//
// New starts an httptest.Server that speaks each service's real wire protocol, so the real
// aws-sdk-go-v2 clients, built from AWS.Config (which points BaseEndpoint at the server and
// uses static credentials), work against it unchanged:
//
//   - EC2: the EC2 Query protocol (form-encoded requests, XML responses and
//     <Response><Errors><Error> error bodies);
//   - IAM: the AWS Query protocol (<ErrorResponse><Error> error bodies);
//   - SSM and Pricing: AWS JSON 1.1 (X-Amz-Target AmazonSSM.* and AWSPriceListService.*);
//   - SQS: AWS JSON 1.0 with the awsQueryCompatible trait (X-Amz-Target AmazonSQS.*, errors
//     carry the legacy code in the x-amzn-query-error header, as SQS sends it);
//   - EKS: REST-JSON (GET /clusters/{name});
//   - ARC zonal shift: REST-JSON (GET /managedresources/{resourceIdentifier}).
//
// SigV4 signatures are ignored. Only the operations the provider uses are implemented (see the
// handlers); each validates its parameters the way AWS does and answers AWS's real error codes
// (InvalidSubnetID.NotFound, InvalidLaunchTemplateName.NotFoundException, NoSuchEntity,
// ParameterNotFound, AWS.SimpleQueueService.NonExistentQueue, ResourceNotFoundException, …) in
// each protocol's error format, so the SDK surfaces them as smithy.APIError with the right
// ErrorCode.
//
// CreateFleet, CreateLaunchTemplate and RunInstances honour DryRun as EC2 does: a valid request
// answers DryRunOperation (HTTP 412) and creates, launches and consumes nothing, while a
// denied one answers UnauthorizedOperation (HTTP 403) with an encoded authorization failure
// message; RunInstances is served as a dry run only, since the provider launches through
// CreateFleet and calls it only to check its permissions.
//
// Tests seed the fake (AddSubnet, AddImage, PutParameter, …), inject faults
// (SetInsufficientCapacity, SetPoolCapacity, RemoveOffering, Throttle, DenyEC2, SetStatusCheck,
// ScheduleEvent, RegisterZonalShift, StartZonalShift) and inspect what the provider did (Calls, Instances, LaunchTemplates, Fleets,
// …). Instance types default to the project's catalog (pkg/cloudprovider/catalog) and spot
// prices to its spot model. Time comes from Options.Clock, so tests can drive visibility
// timeouts, long polls, instance retention and how long a status check has failed with a fake
// clock.
//
// An AWS is safe for concurrent use: one mutex guards its state.
package fake
