package client

import "github.com/heddlewf/heddle/sdk/converter"

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
