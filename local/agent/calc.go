package agent

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// evaluate computes an arithmetic expression with + - * /, unary minus,
// parentheses and decimal numbers, by recursive descent.
func evaluate(expr string) (float64, error) {
	p := &parser{src: strings.ReplaceAll(strings.ReplaceAll(expr, "×", "*"), "÷", "/")}
	v, err := p.sum()
	if err != nil {
		return 0, err
	}
	if p.skip(); p.pos != len(p.src) {
		return 0, fmt.Errorf("unexpected %q at %d in %q", p.src[p.pos:], p.pos, expr)
	}
	if math.IsInf(v, 0) || math.IsNaN(v) {
		return 0, fmt.Errorf("%q has no finite value", expr)
	}
	return v, nil
}

type parser struct {
	src   string
	pos   int
	depth int
}

func (p *parser) skip() {
	for p.pos < len(p.src) && p.src[p.pos] == ' ' {
		p.pos++
	}
}

func (p *parser) peek() byte {
	p.skip()
	if p.pos < len(p.src) {
		return p.src[p.pos]
	}
	return 0
}

func (p *parser) sum() (float64, error) {
	v, err := p.product()
	for err == nil {
		switch p.peek() {
		case '+', '-':
			op := p.src[p.pos]
			p.pos++
			var r float64
			if r, err = p.product(); op == '+' {
				v += r
			} else {
				v -= r
			}
		default:
			return v, nil
		}
	}
	return 0, err
}

func (p *parser) product() (float64, error) {
	v, err := p.unary()
	for err == nil {
		switch p.peek() {
		case '*', '/':
			op := p.src[p.pos]
			p.pos++
			var r float64
			if r, err = p.unary(); err != nil {
				break
			}
			if op == '*' {
				v *= r
			} else if r == 0 {
				return 0, fmt.Errorf("division by zero")
			} else {
				v /= r
			}
		default:
			return v, nil
		}
	}
	return 0, err
}

func (p *parser) unary() (float64, error) {
	if p.peek() == '-' {
		p.pos++
		v, err := p.unary()
		return -v, err
	}
	return p.primary()
}

func (p *parser) primary() (float64, error) {
	if p.peek() == '(' {
		if p.depth++; p.depth > 64 {
			return 0, fmt.Errorf("too deeply nested")
		}
		p.pos++
		v, err := p.sum()
		if err != nil {
			return 0, err
		}
		if p.peek() != ')' {
			return 0, fmt.Errorf("missing ')'")
		}
		p.pos++
		p.depth--
		return v, nil
	}
	start := p.pos
	for p.pos < len(p.src) && (p.src[p.pos] >= '0' && p.src[p.pos] <= '9' || p.src[p.pos] == '.') {
		p.pos++
	}
	if start == p.pos {
		return 0, fmt.Errorf("expected a number at %d", start)
	}
	return strconv.ParseFloat(p.src[start:p.pos], 64)
}
