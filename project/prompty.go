package project

// prompty loads a .prompty prompt file.
func (l *loader) prompty(_, rel string) {
	l.errf(rel, "unsupported file type \".prompty\": Prompty prompts are not supported yet")
}
