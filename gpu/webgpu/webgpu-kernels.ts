import {
  assertConv2dShape,
  assertDenseShape,
  assertKernelArray,
  assertPoolArgmax,
  assertPoolShape,
  assertSgdStepInputs,
  assertSoftmaxInputs,
} from '../cpu/index.ts';
import type { Kernels } from '../engine/index.ts';
import { reluBackwardDispatch, reluDispatch } from './activation-kernels.ts';
import { BufferScope } from './buffer-scope.ts';
import { conv2dForwardDispatch, conv2dInputGradDispatch } from './conv-kernels.ts';
import { conv2dParamGradDispatches, convParamGradPlan } from './conv-param-grad-kernels.ts';
import {
  denseBiasGradDispatch,
  denseForwardDispatch,
  denseInputGradDispatch,
  denseWeightGradDispatch,
} from './dense-kernels.ts';
import type { GpuContext } from './gpu-context.ts';
import { maxPoolBackwardDispatch, maxPoolForwardDispatch } from './pool-kernels.ts';
import { sgdDispatch } from './sgd-kernels.ts';
import { lossMeanDispatch, softmaxDispatch } from './softmax-kernels.ts';

function floats(data: ArrayBuffer): Float32Array {
  return new Float32Array(data);
}

function labelsU32(labels: Uint8Array): Uint32Array {
  return Uint32Array.from(labels);
}

/** w followed by b in one array: the layout the parameter-buffer kernels read. */
function concat(w: Float32Array, b: Float32Array): Float32Array {
  const wb = new Float32Array(w.length + b.length);
  wb.set(w);
  wb.set(b, w.length);
  return wb;
}

/**
 * The WebGPU engine's {@link Kernels}, kernel by kernel: validate (with the CPU engine's checks, so
 * both refuse the same inputs), upload, run the same dispatches `train` runs, read back; every
 * buffer is freed after the call.
 */
export function createWebGpuKernels(ctx: GpuContext): Kernels {
  const run = async <T>(what: string, body: (scope: BufferScope) => Promise<T>): Promise<T> => {
    const scope = new BufferScope(ctx);
    try {
      return await ctx.scoped(what, () => body(scope));
    } finally {
      scope.destroy();
    }
  };
  return {
    async denseForward(x, w, b, batch, inputs, outputs) {
      assertDenseShape(batch, inputs, outputs);
      assertKernelArray('x', x, batch * inputs, `batch ${batch} × inputs ${inputs}`);
      assertKernelArray('w', w, outputs * inputs, `outputs ${outputs} × inputs ${inputs}`);
      assertKernelArray('b', b, outputs, `outputs ${outputs}`);
      return run('denseForward', async (s) => {
        const xb = s.upload(x, 'x');
        const pb = s.upload(concat(w, b), 'w+b');
        const y = s.storage(batch * outputs * 4, 'y');
        ctx.submit([
          denseForwardDispatch(ctx, xb, pb, y, {
            batch,
            inputs,
            outputs,
            weightOffset: 0,
            biasOffset: w.length,
          }),
        ]);
        const [yb] = await ctx.read([{ buffer: y, byteLength: batch * outputs * 4 }]);
        return floats(yb!);
      });
    },
    async denseBackward(x, w, dy, batch, inputs, outputs) {
      assertDenseShape(batch, inputs, outputs);
      assertKernelArray('x', x, batch * inputs, `batch ${batch} × inputs ${inputs}`);
      assertKernelArray('w', w, outputs * inputs, `outputs ${outputs} × inputs ${inputs}`);
      assertKernelArray('dy', dy, batch * outputs, `batch ${batch} × outputs ${outputs}`);
      return run('denseBackward', async (s) => {
        const xb = s.upload(x, 'x');
        const wb = s.upload(w, 'w');
        const dyb = s.upload(dy, 'dy');
        const dx = s.storage(batch * inputs * 4, 'dx');
        const g = s.storage((w.length + outputs) * 4, 'dw+db');
        const shape = { batch, inputs, outputs, weightOffset: 0, biasOffset: w.length };
        ctx.submit([
          denseInputGradDispatch(ctx, dyb, wb, dx, shape),
          denseWeightGradDispatch(ctx, dyb, xb, g, shape),
          denseBiasGradDispatch(ctx, dyb, g, shape),
        ]);
        const [dxBytes, gBytes] = await ctx.read([
          { buffer: dx, byteLength: batch * inputs * 4 },
          { buffer: g, byteLength: (w.length + outputs) * 4 },
        ]);
        const all = floats(gBytes!);
        return { dx: floats(dxBytes!), dw: all.slice(0, w.length), db: all.slice(w.length) };
      });
    },
    async conv2dForward(x, w, b, shape) {
      const out = assertConv2dShape(shape);
      const { batch, channels, height, width, filters, kernel } = shape;
      const dims = `batch ${batch} × channels ${channels} × height ${height} × width ${width}`;
      assertKernelArray('x', x, batch * channels * height * width, dims);
      const wDims = `filters ${filters} × channels ${channels} × kernel ${kernel} × ${kernel}`;
      assertKernelArray('w', w, filters * channels * kernel * kernel, wDims);
      assertKernelArray('b', b, filters, `shape.filters ${filters}`);
      const yBytes = batch * filters * out.outHeight * out.outWidth * 4;
      return run('conv2dForward', async (s) => {
        const xb = s.upload(x, 'x');
        const pb = s.upload(concat(w, b), 'w+b');
        const y = s.storage(yBytes, 'y');
        ctx.submit([conv2dForwardDispatch(ctx, xb, pb, y, shape, { weightOffset: 0, biasOffset: w.length })]);
        const [yb] = await ctx.read([{ buffer: y, byteLength: yBytes }]);
        return floats(yb!);
      });
    },
    async conv2dBackward(x, w, dy, shape) {
      const out = assertConv2dShape(shape);
      const { batch, channels, height, width, filters, kernel } = shape;
      const dims = `batch ${batch} × channels ${channels} × height ${height} × width ${width}`;
      assertKernelArray('x', x, batch * channels * height * width, dims);
      const wDims = `filters ${filters} × channels ${channels} × kernel ${kernel} × ${kernel}`;
      assertKernelArray('w', w, filters * channels * kernel * kernel, wDims);
      const dyDims = `batch ${batch} × filters ${filters} × ${out.outHeight} × ${out.outWidth}`;
      assertKernelArray('dy', dy, batch * filters * out.outHeight * out.outWidth, dyDims);
      return run('conv2dBackward', async (s) => {
        const xb = s.upload(x, 'x');
        const wb = s.upload(w, 'w');
        const dyb = s.upload(dy, 'dy');
        const dx = s.storage(x.byteLength, 'dx');
        const grad = s.storage((w.length + filters) * 4, 'dw+db');
        const plan = convParamGradPlan(shape);
        const partial = s.storage(plan.scratchFloats * 4, 'dw+db partial sums');
        const at = { weightOffset: 0, biasOffset: w.length };
        ctx.submit([
          conv2dInputGradDispatch(ctx, dyb, wb, dx, shape, at),
          ...conv2dParamGradDispatches(ctx, { x: xb, dy: dyb, partial, grad }, shape, at, plan),
        ]);
        const [dxBytes, gBytes] = await ctx.read([
          { buffer: dx, byteLength: x.byteLength },
          { buffer: grad, byteLength: (w.length + filters) * 4 },
        ]);
        const all = floats(gBytes!);
        return { dx: floats(dxBytes!), dw: all.slice(0, w.length), db: all.slice(w.length) };
      });
    },
    async maxPoolForward(x, shape) {
      const out = assertPoolShape(shape);
      const { batch, channels, height, width } = shape;
      const dims = `batch ${batch} × channels ${channels} × height ${height} × width ${width}`;
      assertKernelArray('x', x, batch * channels * height * width, dims);
      const outputs = batch * channels * out.outHeight * out.outWidth;
      return run('maxPoolForward', async (s) => {
        const xb = s.upload(x, 'x');
        const y = s.storage(outputs * 4, 'y');
        const argmax = s.storage(outputs * 4, 'argmax');
        ctx.submit([maxPoolForwardDispatch(ctx, { x: xb, y, argmax }, shape)]);
        const [yBytes, argBytes] = await ctx.read([
          { buffer: y, byteLength: outputs * 4 },
          { buffer: argmax, byteLength: outputs * 4 },
        ]);
        return { y: floats(yBytes!), argmax: new Uint32Array(argBytes!) };
      });
    },
    async maxPoolBackward(dy, argmax, shape) {
      const out = assertPoolShape(shape);
      const { batch, channels, height, width } = shape;
      const outputs = batch * channels * out.outHeight * out.outWidth;
      const dyDims = `batch ${batch} × channels ${channels} × ${out.outHeight} × ${out.outWidth}`;
      assertKernelArray('dy', dy, outputs, dyDims);
      assertPoolArgmax(argmax, shape, out);
      const dxBytes = batch * channels * height * width * 4;
      return run('maxPoolBackward', async (s) => {
        const dyb = s.upload(dy, 'dy');
        const ab = s.upload(argmax, 'argmax');
        const dx = s.storage(dxBytes, 'dx');
        ctx.submit([maxPoolBackwardDispatch(ctx, { dy: dyb, argmax: ab, dx }, shape)]);
        const [o] = await ctx.read([{ buffer: dx, byteLength: dxBytes }]);
        return floats(o!);
      });
    },
    async relu(x) {
      assertKernelArray('x', x, x?.length ?? -1, 'itself');
      if (x.length === 0) return new Float32Array(0);
      return run('relu', async (s) => {
        const xb = s.upload(x, 'x');
        const out = s.storage(x.byteLength, 'out');
        ctx.submit([reluDispatch(ctx, xb, out, x.length)]);
        const [o] = await ctx.read([{ buffer: out, byteLength: x.byteLength }]);
        return floats(o!);
      });
    },
    async reluBackward(x, dy) {
      assertKernelArray('x', x, x?.length ?? -1, 'itself');
      assertKernelArray('dy', dy, x.length, 'x');
      if (x.length === 0) return new Float32Array(0);
      return run('reluBackward', async (s) => {
        const xb = s.upload(x, 'x');
        const dyb = s.upload(dy, 'dy');
        const dx = s.storage(x.byteLength, 'dx');
        ctx.submit([reluBackwardDispatch(ctx, xb, dyb, dx, x.length)]);
        const [o] = await ctx.read([{ buffer: dx, byteLength: x.byteLength }]);
        return floats(o!);
      });
    },
    async softmaxCrossEntropy(logits, labels, batch, classes) {
      assertSoftmaxInputs(logits, labels, batch, classes);
      return run('softmaxCrossEntropy', async (s) => {
        const zb = s.upload(logits, 'logits');
        const lb = s.upload(labelsU32(labels), 'labels');
        const dz = s.storage(logits.byteLength, 'dlogits');
        const rowLoss = s.storage(batch * 4, 'row loss');
        const predicted = s.storage(batch * 4, 'predicted');
        const loss = s.storage(4, 'loss');
        ctx.submit([
          softmaxDispatch(ctx, { logits: zb, labels: lb, dlogits: dz, rowLoss, predicted }, batch, classes)
            .dispatch,
          lossMeanDispatch(ctx, rowLoss, loss, batch).dispatch,
        ]);
        const [lossBytes, dzBytes] = await ctx.read([
          { buffer: loss, byteLength: 4 },
          { buffer: dz, byteLength: logits.byteLength },
        ]);
        return { loss: floats(lossBytes!)[0]! / batch, dlogits: floats(dzBytes!) };
      });
    },
    async sgdStep(w, grad, velocity, anchor, learningRate, momentum, mu) {
      const n = assertSgdStepInputs(w, grad, velocity, anchor, learningRate, momentum, mu);
      if (n === 0) return { w: new Float32Array(0), velocity: new Float32Array(0) };
      return run('sgdStep', async (s) => {
        const wb = s.upload(w, 'w');
        const vb = s.upload(velocity, 'velocity');
        const gb = s.upload(grad, 'grad');
        const ab = s.upload(anchor, 'anchor');
        ctx.submit([
          sgdDispatch(ctx, { w: wb, velocity: vb, grad: gb, anchor: ab }, n, { learningRate, momentum, mu }),
        ]);
        const [wBytes, vBytes] = await ctx.read([
          { buffer: wb, byteLength: w.byteLength },
          { buffer: vb, byteLength: w.byteLength },
        ]);
        return { w: floats(wBytes!), velocity: floats(vBytes!) };
      });
    },
  };
}
