// The view follows the conversation: while the person is at the end of
// it, the newest message stays in view as it streams (and after a load);
// once they scroll up to read, it stays where they are and offers to jump
// to the latest. Earlier messages put above keep the view in place, and
// scrolling to the top asks for them.

import { useCallback, useEffect, useRef, useState } from 'react';

const NEAR = 48; // pixels from an edge that count as being at it

/**
 * Returns refs for the scrolling log (ref) and what it holds (content),
 * its onScroll handler, whether newer content is out of view (behind),
 * toEnd, which scrolls to the newest, and keepPlace, to call just before
 * earlier messages are put above. newest is the newest message: when it
 * changes out of view, there is more to see below. onTop is called when
 * the person reaches the top.
 */
export function useFollow(newest, onTop) {
  const ref = useRef(null);
  const content = useRef(null);
  const atEnd = useRef(true);
  const pinned = useRef(0); // where the view last put the scroll position, at the end
  const fromEnd = useRef(null); // the distance to the end to keep, once
  const [behind, setBehind] = useState(false);
  const top = useRef(onTop);
  top.current = onTop;

  const pin = useCallback(() => {
    const el = ref.current;
    // The log is gone (the page moved to another chat) before its
    // observer is: nothing to pin.
    if (!el) return;
    el.scrollTop = el.scrollHeight;
    pinned.current = el.scrollTop;
  }, []);
  const toEnd = useCallback(() => {
    pin();
    atEnd.current = true;
    setBehind(false);
  }, [pin]);

  useEffect(() => {
    const el = ref.current;
    const inner = content.current;
    let height = inner.offsetHeight;
    // Called after layout and before paint, whenever the log or what it
    // holds changes size: streaming text, a new message, an image, a form.
    const observer = new ResizeObserver(() => {
      const grew = inner.offsetHeight > height;
      height = inner.offsetHeight;
      if (fromEnd.current !== null) {
        el.scrollTop = el.scrollHeight - fromEnd.current;
        fromEnd.current = null;
      } else if (atEnd.current) {
        pin();
      } else if (grew) {
        setBehind(true);
      }
    });
    observer.observe(inner);
    observer.observe(el);
    return () => observer.disconnect();
  }, [pin]);

  useEffect(() => {
    if (!atEnd.current && newest) setBehind(true);
  }, [newest]);

  const onScroll = useCallback(() => {
    const el = ref.current;
    // The view's own scroll to the end, reported after more content came:
    // only a move up from where it was put leaves the end.
    if (atEnd.current && el.scrollTop >= pinned.current - 1) return;
    atEnd.current = el.scrollHeight - el.scrollTop - el.clientHeight <= NEAR;
    if (atEnd.current) setBehind(false);
    if (el.scrollTop <= NEAR && el.scrollHeight > el.clientHeight) top.current?.();
  }, []);

  const keepPlace = useCallback(() => {
    const el = ref.current;
    fromEnd.current = el.scrollHeight - el.scrollTop;
  }, []);

  return { ref, content, onScroll, behind, toEnd, keepPlace };
}

/**
 * Brings a form that asks this tab something into view and puts the focus
 * in it, once, when it appears.
 */
export function useAsk(form) {
  useEffect(() => ask(form.current), [form]);
}

const FIELDS = 'input, select, textarea, button';

/** Brings el into view and puts the focus in its first field. */
export function ask(el) {
  if (!el) return;
  el.scrollIntoView({ block: 'nearest' });
  el.querySelector(FIELDS)?.focus({ preventScroll: true });
}

/**
 * ask(el) once el holds a field: a renderer that draws its components
 * after the page's own render (A2UI's) fills el a moment later. Returns
 * what stops waiting.
 */
export function askWhenDrawn(el) {
  if (!el) return () => {};
  if (el.querySelector(FIELDS)) {
    ask(el);
    return () => {};
  }
  const observer = new MutationObserver(() => {
    if (!el.querySelector(FIELDS)) return;
    observer.disconnect();
    ask(el);
  });
  observer.observe(el, { childList: true, subtree: true });
  return () => observer.disconnect();
}

/**
 * Returns what a form inside holder calls as it goes away once answered:
 * the focus, if it was in the form, moves to holder (a card that takes
 * focus, tabIndex -1), which then says how the call went, instead of
 * dropping to the page's body with the form.
 */
export function useKeepFocus(holder) {
  return useCallback((form) => {
    if (form?.contains(document.activeElement)) holder.current?.focus({ preventScroll: true });
  }, [holder]);
}