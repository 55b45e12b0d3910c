# Seeds for the fuzz targets: ONNX test models, a real model converted to .om, the pipeline and op-table files of
# the tree, and gear option strings.
file(REMOVE_RECURSE ${OUT})
foreach(d onnx_import om_load pipeline_toml op_table_toml gear_options tensor_pb om_run)
  file(MAKE_DIRECTORY ${OUT}/${d})
endforeach()
set(i 0)
foreach(name test_relu test_if test_loop11 test_reshape_extended_dims test_conv_with_strides_padding test_gather_0
             test_scan9_sum test_resize_upsample_scales_linear test_sequence_insert_at_back test_add_bcast)
  if(EXISTS /usr/share/libonnx-testdata/data/node/${name}/model.onnx)
    file(COPY_FILE /usr/share/libonnx-testdata/data/node/${name}/model.onnx ${OUT}/onnx_import/${name}.onnx)
  endif()
endforeach()
if(EXISTS ${MODELS}/silero_vad_legacy.onnx)
  file(COPY_FILE ${MODELS}/silero_vad_legacy.onnx ${OUT}/onnx_import/silero_vad_legacy.onnx)
endif()
execute_process(COMMAND ${ATC} --model=/usr/share/libonnx-testdata/data/node/test_if/model.onnx
                        --output=${OUT}/om_load/if.om RESULT_VARIABLE r1 OUTPUT_QUIET)
execute_process(COMMAND ${ATC} --model=/usr/share/libonnx-testdata/data/node/test_conv_with_strides_padding/model.onnx
                        --output=${OUT}/om_load/conv.om RESULT_VARIABLE r2 OUTPUT_QUIET)
file(COPY_FILE ${SOURCE}/configs/pipeline.toml ${OUT}/pipeline_toml/default.toml)
file(GLOB tables ${SOURCE}/plugins/engines/*/data/ops.toml ${SOURCE}/sdk/examples/template_engine/data/ops.toml)
foreach(t ${tables})
  math(EXPR i "${i} + 1")
  file(COPY_FILE ${t} ${OUT}/op_table_toml/table${i}.toml)
endforeach()
file(WRITE ${OUT}/gear_options/batch "x:-1,3,224,224\n1,2,4,8\n\n\n")
file(WRITE ${OUT}/gear_options/image "x:1,3,-1,-1\n\n224,224;448,448\n\nNCHW")
file(WRITE ${OUT}/gear_options/dims "a:-1;b:-1,-1,224,224;c:-1,3,224,224;e:3\n\n\n1,3,3,1;2,6,6,4\n")
foreach(name test_relu test_cast_FLOAT_to_FLOAT16 test_equal_bcast test_gather_0 test_castlike_FLOAT_to_STRING)
  set(src /usr/share/libonnx-testdata/data/node/${name}/test_data_set_0/input_0.pb)
  if(EXISTS ${src})
    file(COPY_FILE ${src} ${OUT}/tensor_pb/${name}.pb)
  endif()
endforeach()
# Whole models for om_run: small node tests covering the kernel families and control flow, compiled by atc.
foreach(name test_conv_with_strides_padding test_maxpool_2d_pads test_resize_upsample_scales_linear test_gather_0
             test_matmul_3d test_lstm_defaults test_if test_loop11 test_scan9_sum test_slice test_topk
             test_reduce_mean_default_axes_keepdims_example test_softmax_axis_1 test_pad test_convtranspose
             test_nonmaxsuppression_center_point_box_format test_einsum_batch_matmul)
  if(EXISTS /usr/share/libonnx-testdata/data/node/${name}/model.onnx)
    execute_process(COMMAND ${ATC} --model=/usr/share/libonnx-testdata/data/node/${name}/model.onnx
                            --output=${OUT}/om_run/${name}.om RESULT_VARIABLE r OUTPUT_QUIET ERROR_QUIET)
  endif()
endforeach()
