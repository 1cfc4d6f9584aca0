// Placeholder: the fake peer is added with the transport unit tests.
