/** A text sink (stdout, stderr, or a test buffer): where commands, the demo and simulations write lines. */
export interface TextSink {
  write(text: string): unknown;
}
