package machine

// Exports for the external tests (package machine_test). Those drive the
// machine through the embedded runtime (a LocalLog, a Meter), which
// imports this package, so they cannot be internal tests; what of the
// machine's insides they read is named here, for them alone.

var (
	DefaultMachine = defaultMachine
	ClaimedNothing = claimedNothing
	CloneLabels    = cloneLabels
	LeaseToken     = leaseToken
	LeaseDigest    = leaseDigest
	ReadStep       = readStep
	ReadResource   = readResource
	JobQueueStatus = jobQueueStatus
	PruneTurn      = pruneTurn
)

const (
	CommandVersion       = commandVersion
	DefaultAnswerLeaseMS = defaultAnswerLeaseMS
	EffectVersion        = effectVersion
	JobVersion           = jobVersion
	RequestPruneBatch    = requestPruneBatch
)

// Envelope is the log form's envelope of a command.
type Envelope = envelope
