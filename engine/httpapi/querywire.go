package httpapi

// QueryRequest asks the workers of a run's task queue to answer a query
// (POST /v1/query).
type QueryRequest struct {
	WorkflowID string `json:"workflow_id" msgpack:"wf"`
	// RunID is a job id in decimal; "" means the workflow id's current run.
	RunID     string `json:"run_id,omitempty" msgpack:"run,omitempty"`
	QueryType string `json:"query_type" msgpack:"qt"`
	// Args are the query's arguments as converter.Encode writes them (a
	// JSON array); base64 in a JSON body.
	Args []byte `json:"args,omitempty" msgpack:"args,omitempty"`
}

// QueryResult answers a QueryRequest with the handler's encoded result.
type QueryResult struct {
	Result []byte `json:"result,omitempty" msgpack:"r,omitempty"`
}

// QueryPoll is a worker's long poll for the queries of its task queue
// (POST /v1/query/poll).
type QueryPoll struct {
	Queue string `json:"queue" msgpack:"qu"`
	// Max bounds the queries handed out at once; 0 means 1.
	Max int `json:"max,omitempty" msgpack:"mx,omitempty"`
}

// QueryPollResult answers a QueryPoll; it is empty when the wait ran out.
type QueryPollResult struct {
	Queries []PendingQuery `json:"queries" msgpack:"qs"`
}

// PendingQuery is one query handed to a worker.
type PendingQuery struct {
	// ID names the query in the answer.
	ID         string `json:"id" msgpack:"id"`
	WorkflowID string `json:"workflow_id" msgpack:"wf"`
	// RunID is the run the server resolved the request to, in decimal.
	RunID     string `json:"run_id" msgpack:"run"`
	QueryType string `json:"query_type" msgpack:"qt"`
	Args      []byte `json:"args,omitempty" msgpack:"args,omitempty"`
	// TimeoutMS is how long the asking client still waits.
	TimeoutMS int64 `json:"timeout_ms" msgpack:"to"`
}

// QueryAnswer is a worker's answer to a PendingQuery
// (POST /v1/query/answer): a result, or an error.
type QueryAnswer struct {
	ID     string     `json:"id" msgpack:"id"`
	Result []byte     `json:"result,omitempty" msgpack:"r,omitempty"`
	Error  *ErrorBody `json:"error,omitempty" msgpack:"e,omitempty"`
}

// QueryAnswerResult says whether the asking client still waited for the answer.
type QueryAnswerResult struct {
	Delivered bool `json:"delivered" msgpack:"d"`
}

// maxQueryPoll bounds QueryPoll.Max.
const maxQueryPoll = 100
