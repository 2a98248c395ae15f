package client

import (
	"github.com/heddlewf/heddle/internal/sdkhook"
	"github.com/heddlewf/heddle/sdk/converter"
)

// DataConverter returns the client's data converter (the default when
// Options.DataConverter is nil); sdk/worker asks for it, so the workers
// made from the client store payloads as the client does.
func (c *workflowClient) DataConverter() converter.DataConverter {
	if c.opts.DataConverter == nil {
		return converter.GetDefaultDataConverter()
	}
	return c.opts.DataConverter
}

// encode writes values as the client's data converter stores them.
func (c *workflowClient) encode(values ...any) ([]byte, error) {
	return converter.EncodeWith(c.DataConverter(), values...)
}

// decode reads payload bytes stored by any client (plain, or an envelope
// of this client's converter) into valuePtrs.
func (c *workflowClient) decode(data []byte, valuePtrs ...any) error {
	return converter.DecodeWith(c.DataConverter(), data, valuePtrs...)
}

// FailureConverter returns the client's failure converter (nil for the
// default); sdk/worker asks for it, so the workers made from the client
// store failures as the client does.
func (c *workflowClient) FailureConverter() converter.FailureConverter {
	return c.opts.FailureConverter
}

// decodeFailure reads a failure payload stored with the client's failure
// converter as the error it records.
func (c *workflowClient) decodeFailure(data []byte) error {
	return sdkhook.DecodeFailure(sdkhook.FailureFromStored(c.opts.FailureConverter, data))
}

// encodeFailure writes err as the client's failure converter stores it.
func (c *workflowClient) encodeFailure(err error) []byte {
	return sdkhook.FailureToStored(c.opts.FailureConverter, sdkhook.EncodeFailure(err))
}

// failureFromStored turns a failure stored with the client's failure
// converter into heddle's own form, which the SDK's decoders read.
func (c *workflowClient) failureFromStored(data []byte) []byte {
	return sdkhook.FailureFromStored(c.opts.FailureConverter, data)
}
