package modeltest

import (
	"encoding/binary"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"google.golang.org/genai"
)

// The Live API's audio: 16-bit little-endian mono PCM, the user's at
// InputRate, the model's at OutputRate.
const (
	InputRate  = 16000
	OutputRate = 24000
)

// loud is the sample magnitude from which the stand-in hears speech; below
// it, silence.
const loud = 1000

// defaultSilence ends a user's audio turn under automatic activity
// detection when the setup names no silenceDurationMs.
const defaultSilence = 500 * time.Millisecond

// speechPerChar is how long the stand-in's voice takes per character of
// text.
const speechPerChar = 60 * time.Millisecond

// Tone is d of a 440 Hz sine tone as 16-bit mono PCM at rate: audio the
// stand-in hears as speech, and the voice it answers with.
func Tone(d time.Duration, rate int) []byte {
	n := int(d.Seconds() * float64(rate))
	pcm := make([]byte, 2*n)
	for i := range n {
		v := int16(8000 * math.Sin(2*math.Pi*440*float64(i)/float64(rate)))
		binary.LittleEndian.PutUint16(pcm[2*i:], uint16(v))
	}
	return pcm
}

// Silence is d of silence as 16-bit mono PCM at rate.
func Silence(d time.Duration, rate int) []byte {
	return make([]byte, 2*int(d.Seconds()*float64(rate)))
}

// WAV wraps 16-bit mono PCM at rate in a WAV file (for a browser's fake
// microphone, such as Chromium's --use-file-for-fake-audio-capture).
func WAV(pcm []byte, rate int) []byte {
	h := make([]byte, 44)
	copy(h[0:], "RIFF")
	binary.LittleEndian.PutUint32(h[4:], uint32(36+len(pcm)))
	copy(h[8:], "WAVEfmt ")
	binary.LittleEndian.PutUint32(h[16:], 16)
	binary.LittleEndian.PutUint16(h[20:], 1) // PCM
	binary.LittleEndian.PutUint16(h[22:], 1) // mono
	binary.LittleEndian.PutUint32(h[24:], uint32(rate))
	binary.LittleEndian.PutUint32(h[28:], uint32(2*rate))
	binary.LittleEndian.PutUint16(h[32:], 2)
	binary.LittleEndian.PutUint16(h[34:], 16)
	copy(h[36:], "data")
	binary.LittleEndian.PutUint32(h[40:], uint32(len(pcm)))
	return append(h, pcm...)
}

// audioTurn is the user's audio turn being heard.
type audioTurn struct {
	explicit    bool // activityStart began it: only activityEnd ends it
	pcm         []byte
	rate        int
	spoke       bool
	first, last int // the first and last loud samples, once spoke
	quiet       int // samples since the last loud one
}

// realtime takes a realtimeInput frame.
func (c *LiveConn) realtime(in *LiveRealtimeInput) bool {
	switch {
	case in.ActivityStart != nil:
		c.audio = audioTurn{explicit: true}
		c.interrupt()
		return true
	case in.ActivityEnd != nil:
		return c.endAudioTurn()
	case in.Text != "":
		c.interrupt()
		c.see(genai.NewContentFromText(in.Text, genai.RoleUser))
		return c.modelTurn()
	}
	blobs := in.MediaChunks
	if in.Audio != nil {
		blobs = append(blobs, in.Audio)
	}
	for _, b := range blobs {
		if strings.HasPrefix(b.MIMEType, "audio/") && c.hear(b) && !c.endAudioTurn() {
			return false
		}
	}
	if in.AudioStreamEnd && c.audio.spoke {
		return c.endAudioTurn()
	}
	return true
}

// hear adds a blob to the audio turn and reports whether automatic
// activity detection ends the turn: speech, then the setup's silence.
func (c *LiveConn) hear(b *genai.Blob) bool {
	a := &c.audio
	if a.rate == 0 {
		a.rate = rateOf(b.MIMEType, InputRate)
	}
	start := len(a.pcm) / 2
	a.pcm = append(a.pcm, b.Data...)
	for i := 0; i+1 < len(b.Data); i += 2 {
		v := int16(binary.LittleEndian.Uint16(b.Data[i:]))
		if v < loud && v > -loud {
			if a.spoke {
				a.quiet++
			}
			continue
		}
		if !a.spoke {
			a.spoke, a.first = true, start+i/2
			c.interrupt()
		}
		a.last, a.quiet = start+i/2, 0
	}
	silence, auto := c.activityDetection()
	return auto && !a.explicit && a.spoke && a.quiet >= int(silence.Seconds()*float64(a.rate))
}

// activityDetection is the silence that ends a turn, and whether the
// server detects activity itself (the setup did not disable it).
func (c *LiveConn) activityDetection() (time.Duration, bool) {
	cfg := c.Setup().RealtimeInputConfig
	if cfg == nil || cfg.AutomaticActivityDetection == nil {
		return defaultSilence, true
	}
	aad := cfg.AutomaticActivityDetection
	silence := defaultSilence
	if aad.SilenceDurationMs != nil {
		silence = time.Duration(*aad.SilenceDurationMs) * time.Millisecond
	}
	return silence, !aad.Disabled
}

// interrupt cancels the blocking calls the model waits on: the user spoke
// or wrote into the model's turn, which a blocking call keeps open.
func (c *LiveConn) interrupt() {
	if c.waiting() {
		c.CancelCalls()
	}
}

// endAudioTurn answers the audio heard: its transcription, then the
// script's answer to the words Transcribe heard, or the fixed answer
// naming how long the audio lasted.
func (c *LiveConn) endAudioTurn() bool {
	a := c.audio
	c.audio = audioTurn{}
	if a.rate == 0 || (!a.explicit && !a.spoke) {
		return true
	}
	samples := len(a.pcm) / 2
	if !a.explicit {
		samples = a.last - a.first + 1
	}
	heard := strconv.FormatFloat(float64(samples)/float64(a.rate), 'f', 1, 64)
	words := ""
	if f := c.s.opts.Transcribe; f != nil {
		words = f(a.pcm, a.rate)
	}
	transcript := words
	if transcript == "" {
		transcript = "(" + heard + " seconds of audio)"
	}
	if c.Setup().InputAudioTranscription != nil &&
		!c.send(&genai.LiveServerMessage{ServerContent: &genai.LiveServerContent{InputTranscription: &genai.Transcription{Text: transcript, Finished: true}}}) {
		return false
	}
	c.see(genai.NewContentFromText(transcript, genai.RoleUser))
	if words != "" {
		return c.modelTurn()
	}
	return c.speak(genai.NewContentFromText("I heard "+heard+" seconds of audio.", genai.RoleModel))
}

// say sends the model's words: text pieces of three words, or, when the
// setup asks for audio, tone audio in 100 ms chunks with the words spread
// over them as output transcription; then generationComplete.
func (c *LiveConn) say(text string) bool {
	if !c.speaksAudio() {
		words := strings.SplitAfter(text, " ")
		for i := 0; i < len(words); i += 3 {
			piece := strings.Join(words[i:min(i+3, len(words))], "")
			if !c.send(modelTurnOf(genai.NewPartFromText(piece))) {
				return false
			}
		}
	} else if !c.voice(text) {
		return false
	}
	return c.send(&genai.LiveServerMessage{ServerContent: &genai.LiveServerContent{GenerationComplete: true}})
}

func (c *LiveConn) voice(text string) bool {
	pcm := Tone(time.Duration(len(text))*speechPerChar, OutputRate)
	const chunk = OutputRate / 10 * 2
	n := (len(pcm) + chunk - 1) / chunk
	words := strings.Fields(text)
	transcribe := c.Setup().OutputAudioTranscription != nil
	for i := range n {
		blob := &genai.Blob{MIMEType: fmt.Sprintf("audio/pcm;rate=%d", OutputRate), Data: pcm[i*chunk : min((i+1)*chunk, len(pcm))]}
		if !c.send(modelTurnOf(&genai.Part{InlineData: blob})) {
			return false
		}
		piece := strings.Join(words[i*len(words)/n:(i+1)*len(words)/n], " ")
		if piece == "" || !transcribe {
			continue
		}
		if i*len(words)/n > 0 {
			piece = " " + piece
		}
		if !c.send(&genai.LiveServerMessage{ServerContent: &genai.LiveServerContent{OutputTranscription: &genai.Transcription{Text: piece}}}) {
			return false
		}
	}
	return true
}

func modelTurnOf(p *genai.Part) *genai.LiveServerMessage {
	return &genai.LiveServerMessage{ServerContent: &genai.LiveServerContent{ModelTurn: &genai.Content{Role: genai.RoleModel, Parts: []*genai.Part{p}}}}
}

// speaksAudio reports whether the setup asks for audio answers.
func (c *LiveConn) speaksAudio() bool {
	if gc := c.Setup().GenerationConfig; gc != nil {
		for _, m := range gc.ResponseModalities {
			if m == genai.ModalityAudio {
				return true
			}
		}
	}
	return false
}

// rateOf reads the rate of a PCM media type ("audio/pcm;rate=16000").
func rateOf(mime string, def int) int {
	_, params, ok := strings.Cut(mime, "rate=")
	if !ok {
		return def
	}
	r, err := strconv.Atoi(strings.TrimSpace(strings.Split(params, ";")[0]))
	if err != nil || r <= 0 {
		return def
	}
	return r
}
