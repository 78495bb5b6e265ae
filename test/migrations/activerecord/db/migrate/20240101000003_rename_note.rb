class RenameNote < ActiveRecord::Migration[6.1]
  def change
    %i[ar_row ar_tab ar_res].each { |t| rename_column t, :note, :memo }
  end
end
