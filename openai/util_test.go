package openai_test

import (
	"errors"

	"github.com/weft-agents/weft"
)

func asProviderError(err error, pe **weft.ProviderError) bool { return errors.As(err, pe) }
