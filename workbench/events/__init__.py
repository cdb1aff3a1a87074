"""The v1 events: protocol (encoder, reader, validator), field types, the files they live in, the batched steps line, the text log."""
