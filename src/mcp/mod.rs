//! rmcp server handler, transports and auth.
