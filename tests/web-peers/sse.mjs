// Reads a fetch Response's SSE body: calls onEvent(id, parsedData) per event; returning false
// (or a promise of false) cancels the stream. Shared by the AG-UI peer scripts.
export async function readSse(response, onEvent) {
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return;
    buffer += decoder.decode(value, { stream: true });
    let at;
    while ((at = buffer.indexOf("\n\n")) >= 0) {
      const frame = buffer.slice(0, at);
      buffer = buffer.slice(at + 2);
      let id;
      let data = "";
      for (const line of frame.split("\n")) {
        if (line.startsWith("id:")) id = Number(line.slice(3).trim());
        else if (line.startsWith("data:")) data += line.slice(5).trimStart();
      }
      if (data && (await onEvent(id, JSON.parse(data))) === false) {
        await reader.cancel();
        return;
      }
    }
  }
}
